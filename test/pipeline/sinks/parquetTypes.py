"""Reads the Parquet files the service wrote with pyarrow and polars, as a quant would (no DuckDB), and prints one JSON
line of what each library saw; test/pipeline/sinks/parquetTypes.test.ts checks it. Usage: parquetTypes.py <file>"""
import json
import sys

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

path = sys.argv[1]
table = pq.read_table(path)
created = table.schema.field("created_at").type
conditions = table.schema.field("conditions").type
native = pl.read_parquet(path)
via_arrow = pl.read_parquet(path, use_pyarrow=True)
print(json.dumps({
    "pyarrow": {
        "created_at": {"timestamp": pa.types.is_timestamp(created), "unit": created.unit, "tz": created.tz},
        "created_at_first": table.column("created_at")[0].as_py().isoformat(),
        "conditions_json": isinstance(conditions, pa.JsonType),
        "conditions_first": json.loads(table.column("conditions")[0].as_py()),
    },
    "polars": {
        "created_at": str(native.schema["created_at"]),
        "created_at_first": native["created_at"][0].isoformat(),
        "conditions_native": str(native.schema["conditions"]),
        "conditions_native_first": json.loads(native["conditions"].cast(pl.String)[0]),
        "conditions_via_pyarrow": str(via_arrow.schema["conditions"]),
    },
}))
