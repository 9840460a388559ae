import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Mock`: writes `<Name>Mock`, the protocol implemented by closures a test sets per endpoint
/// (`mockTodos { name, done in … }`). A call of an endpoint with no closure throws (or hands
/// its completion handler) `.invalidRequest` naming it.
public struct MockMacro: PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        guard let protocolDecl = declaration.as(ProtocolDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: APIDiagnostic.notAProtocol("Mock")))
            return []
        }
        let model = APIModel(protocolDecl)
        // With @API beside it, @API says what is wrong; saying it twice helps no one.
        let hasAPI = protocolDecl.attributes.contains { $0.as(AttributeSyntax.self)?.macroName == "API" }
        if !hasAPI {
            for diagnostic in model.diagnostics {
                context.diagnose(diagnostic)
            }
        }
        guard model.diagnostics.isEmpty else { return [] }
        var problems = false
        for endpoint in model.endpoints {
            if let type = endpoint.declaration.signature.effectSpecifiers?.throwsClause?.type,
               !["ClientError", "Salvo.ClientError", "any Error", "Error"].contains(type.trimmedDescription) {
                context.diagnose(Diagnostic(node: type, message: APIDiagnostic.mockTypedThrows))
                problems = true
            }
        }
        if problems { return [] }
        return [Self.mock(of: model)]
    }

    static func mock(of model: APIModel) -> DeclSyntax {
        let access = model.memberAccess
        let mockName = model.name + "Mock"
        var members = ["private let endpoints = SalvoMacros.MockEndpoints()", "\(access)init() {}"]
        for endpoint in model.endpoints {
            let function = endpoint.declaration
            let parameters = Array(function.signature.parameterClause.parameters)
            let key = EndpointModel.quoted(function.name.text + function.signature.parameterClause.trimmedDescription)
            let handlerType = Self.handlerType(of: function)
            let name = function.name.text.trimmingBackticks
            let setter = "mock" + name.prefix(1).uppercased() + name.dropFirst()
            let arguments = parameters.map { ($0.secondName ?? $0.firstName).text }.joined(separator: ", ")
            members.append("""
                /// Answers `\(function.name.text)` with `handler` from now on.
                \(access)func \(setter)(_ handler: @escaping \(handlerType)) {
                    self.endpoints.set(\(key), handler)
                }
                """)
            let handler = APIMacro.localName("handler", avoiding: function)
            var body: String
            if let completion = endpoint.completion {
                body = """
                    guard let \(handler) = self.endpoints.handler(\(key), as: (\(handlerType)).self) else {
                        SalvoMacros.MockEndpoints.fail(\(completion), \(key), in: \(EndpointModel.quoted(mockName)))
                        \(endpoint.returnsValue ? "return Salvo.CallHandle()" : "return")
                    }
                    return \(handler)(\(arguments))
                    """
            } else {
                body = """
                    guard let \(handler) = self.endpoints.handler(\(key), as: (\(handlerType)).self) else {
                        throw SalvoMacros.MockEndpoints.notMocked(\(key), in: \(EndpointModel.quoted(mockName)))
                    }
                    return try await \(handler)(\(arguments))
                    """
            }
            body = body.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
            members.append(APIMacro.signature(of: function, access: access) + " {\n" + body + "\n}")
        }
        return """
            /// The `\(raw: model.name)` endpoints answered by closures: `mock…` sets one per endpoint.
            \(raw: model.typeAccess)final class \(raw: mockName): \(raw: model.name), Sendable {
            \(raw: members.joined(separator: "\n\n"))
            }
            """
    }

    /// `@Sendable (Arguments) async throws -> Return` for an endpoint, its effects as declared.
    private static func handlerType(of function: FunctionDeclSyntax) -> String {
        let parameters = function.signature.parameterClause.parameters.map { $0.type.trimmedDescription }.joined(separator: ", ")
        let effects = function.signature.effectSpecifiers.map { " " + $0.trimmedDescription } ?? ""
        let output = function.signature.returnClause?.type.trimmedDescription ?? "Void"
        return "@Sendable (\(parameters))\(effects) -> \(output)"
    }
}
