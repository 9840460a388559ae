import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Request` on a struct whose `body` builds a request: makes the struct a
/// `RequestDeclaration`, which the client sends as the request its `body` returns.
public struct RequestMacro: ExtensionMacro {
    public static func expansion(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
                                 providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
                                 in context: some MacroExpansionContext) throws -> [ExtensionDeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: APIDiagnostic.requestNotStruct))
            return []
        }
        let hasBody = structDecl.memberBlock.members.contains { member in
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { return false }
            return variable.bindings.contains { $0.pattern.as(IdentifierPatternSyntax.self)?.identifier.text == "body" }
        }
        guard hasBody else {
            context.diagnose(Diagnostic(node: structDecl.name, message: APIDiagnostic.requestWithoutBody))
            return []
        }
        // Already declared by hand: nothing to add.
        let declared = structDecl.inheritanceClause?.inheritedTypes.contains {
            $0.type.trimmedDescription.hasSuffix("RequestDeclaration")
        } ?? false
        if declared { return [] }
        let conformance: DeclSyntax = "extension \(type.trimmed): RequestDeclaration {}"
        return [conformance.cast(ExtensionDeclSyntax.self)]
    }
}
