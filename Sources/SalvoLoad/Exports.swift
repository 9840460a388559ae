// A workload's file imports SalvoLoad alone: its set-up speaks to the engine's HTTPClient
// and builds HTTPRequests, and its scenarios name fields (`.contentType`).
@_exported import HTTPTypes
@_exported import SalvoCore
