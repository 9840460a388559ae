// The engine client and the service group come with `import SalvoServiceLifecycle`.
@_exported import SalvoCore
@_exported import ServiceLifecycle
