#!/usr/bin/env bash
# Prints every failed check of a TAP stream with its file and the first lines of its diagnostic, or one line saying
# none failed. Used by test/run.sh at the end of a run off a terminal.
#   bash test/failures.sh <tap-output-file>
set -euo pipefail
awk '
  /^# Subtest: test\// { file = $3 }
  # a check marked todo is a known gap that passes in TAP, not a failure (nor is its diagnostic shown)
  /^[ ]*not ok .*# [Tt][Oo][Dd][Oo]/ { diag = 0; next }
  /^[ ]*not ok / {
    failed++
    line = $0; sub(/^[ ]+/, "", line)
    print "FAILED [" file "] " substr(line, 1, 400)
    # the failure line of a whole file carries only its command line; its failed checks come with their diagnostics
    diag = ($0 ~ /^[ ]/); shown = 0; next
  }
  diag && /^[ ]*---$/ { next }
  diag && /^[ ]*\.\.\.$/ { diag = 0; next }
  diag && shown < 12 { print "    " substr($0, 1, 300); shown++; next }
  diag && !/^[ ]+/ { diag = 0 }
  END {
    if (failed) print "== " failed " failed checks (and the subtests and files above them) listed above"
    else print "== no failed checks"
  }
' "$1" | { echo "== failures of this run"; cat; }
