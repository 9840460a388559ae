import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@API`: writes `<Name>API`, the protocol implemented over a Salvo client. Each function
/// becomes what a careful person would write by hand: an `APIRequest` for the method and path,
/// one `add` per argument (the compiler picks its role from its type), one `send` (the compiler
/// picks it from the return type).
public struct APIMacro: PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        guard let protocolDecl = declaration.as(ProtocolDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: APIDiagnostic.notAProtocol("API")))
            return []
        }
        let model = APIModel(protocolDecl)
        for diagnostic in model.diagnostics {
            context.diagnose(diagnostic)
        }
        guard model.diagnostics.isEmpty else { return [] }
        return [Self.implementation(of: model)]
    }

    static func implementation(of model: APIModel) -> DeclSyntax {
        let access = model.memberAccess
        var members: [String] = []
        members.append("\(access)let client: Salvo.Client")
        members.append("private static let scope = \(model.scope.initializer)")
        let staticNames = model.endpointNames()
        for (endpoint, name) in zip(model.endpoints, staticNames) {
            let scope = endpoint.scope.isEmpty ? "Self.scope" : "Self.scope.merging(\(endpoint.scope.initializer))"
            let keys = endpoint.parameters.map { EndpointModel.quoted($0.key) }.joined(separator: ", ")
            members.append("private static let \(name) = SalvoMacros.APIEndpoint(method: \(endpoint.method), path: \(EndpointModel.quoted(endpoint.path)), keys: [\(keys)], scope: \(scope), operationName: \(EndpointModel.quoted(endpoint.signature)))")
        }
        members.append("""
            /// Sends the endpoints' requests with `client`: its base URL, middleware and policies.
            \(access)init(client: Salvo.Client) {
                self.client = client
            }
            """)
        for (endpoint, name) in zip(model.endpoints, staticNames) {
            members.append(Self.function(endpoint, endpoint: "Self." + name,
                                         errorBody: endpoint.scope.errorBody ?? model.scope.errorBody, access: access))
        }
        let body = members.joined(separator: "\n\n")
        return """
            /// The `\(raw: model.name)` endpoints over a Salvo client.
            \(raw: model.typeAccess)struct \(raw: model.name)API: \(raw: model.name), Sendable {
            \(raw: body)
            }
            """
    }

    private static func function(_ endpoint: EndpointModel, endpoint name: String, errorBody: ExprSyntax?, access: String) -> String {
        let failure = errorBody.map { ", failure: \($0.trimmedDescription).self" } ?? ""
        let binding = endpoint.parameters.isEmpty ? "let" : "var"
        let local = Self.localName("request", avoiding: endpoint.declaration)
        var lines = ["\(binding) \(local) = SalvoMacros.APIRequest(\(name)\(failure))"]
        for parameter in endpoint.parameters {
            lines.append("\(local).add(\(parameter.reference), key: \(EndpointModel.quoted(parameter.key)))")
        }
        if let completion = endpoint.completion {
            lines.append("\(endpoint.returnsValue ? "return " : "")\(local).send(with: self.client, completion: \(completion))")
        } else {
            lines.append("return try await \(local).send(with: self.client)")
        }
        return Self.signature(of: endpoint.declaration, access: access) + " {\n" + lines.map { "    " + $0 }.joined(separator: "\n") + "\n}"
    }

    /// `preferred`, or a variant of it, that no parameter of `function` is named.
    static func localName(_ preferred: String, avoiding function: FunctionDeclSyntax) -> String {
        let taken = Set(function.signature.parameterClause.parameters.map { ($0.secondName ?? $0.firstName).text.trimmingBackticks })
        var name = preferred
        var index = 2
        while taken.contains(name) {
            name = preferred + "\(index)"
            index += 1
        }
        return name
    }

    /// `func name(parameters) effects -> Return`, as the protocol declares it, without its
    /// attributes.
    static func signature(of function: FunctionDeclSyntax, access: String) -> String {
        let modifiers = function.modifiers.filter { $0.name.tokenKind != .keyword(.mutating) }.map { $0.trimmedDescription + " " }.joined()
        return "\(access)\(modifiers)func \(function.name.text)\(function.signature.trimmedDescription)"
    }
}
