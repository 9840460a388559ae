// What an application names when it sets the observer up — the engine's configuration, a
// Logger, the metrics factory, the tracer — comes with `import SalvoObservability`.
@_exported import CoreMetrics
@_exported import Logging
@_exported import SalvoCore
@_exported import Tracing
