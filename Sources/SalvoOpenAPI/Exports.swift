// The engine client this transport sends through comes with `import SalvoOpenAPI`.
@_exported import SalvoCore
