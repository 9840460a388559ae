-- The scripted workload of issue 34, as a wrk user writes it: a path built for every request,
-- and each response checked (its status, and one field). Checks that fail are counted and
-- printed at the end; wrk runs one Lua state per thread (compare.py runs one thread).
local counter = 0
local failed = 0

request = function()
  counter = counter + 1
  return wrk.format("GET", wrk.path .. "?item=" .. counter)
end

response = function(status, headers, body)
  if status ~= 200 or headers["Content-Type"] ~= "text/plain" then
    failed = failed + 1
  end
end

done = function(summary, latency, requests)
  io.write(string.format("checks failed: %d\n", failed))
end
