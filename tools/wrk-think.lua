-- wrk as the original simulator's client: POST one element, then wait the think
-- time before the connection's next request (wrk's delay() hook, in ms).
-- THINK_MS overrides the 1000 ms default; THINK_MS=0 defines no delay() at all,
-- so wrk sends the next request as soon as a reply is in (its fastest path).
wrk.method = "POST"
wrk.path = "/requests"
wrk.body = '{"size":1024}'
wrk.headers["Content-Type"] = "application/json"

local think_ms = tonumber(os.getenv("THINK_MS") or "1000")

if think_ms > 0 then
  function delay()
    return think_ms
  end
end

-- Non-2xx replies would otherwise pass unnoticed in wrk's summary.
function done(summary, latency, requests)
  io.write(string.format("wrk-summary requests=%d errors_status=%d errors_connect=%d errors_timeout=%d\n",
    summary.requests, summary.errors.status, summary.errors.connect, summary.errors.timeout))
end
