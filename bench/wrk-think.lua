-- A closed model with think time: each of wrk's connections waits WRK_THINK_MS milliseconds after a response before
-- sending its next request, so the server is offered load below saturation and the latency wrk reports is service
-- time rather than queueing behind 63 other connections.
local think = tonumber(os.getenv("WRK_THINK_MS") or "2")

function delay()
  return think
end
