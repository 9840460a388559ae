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
        let body = structDecl.memberBlock.members.lazy.compactMap { $0.decl.as(VariableDeclSyntax.self) }
            .flatMap(\.bindings).first { $0.pattern.as(IdentifierPatternSyntax.self)?.identifier.text == "body" }
        guard let body else {
            context.diagnose(Diagnostic(node: structDecl.name, message: APIDiagnostic.requestWithoutBody))
            return []
        }
        // Already declared by hand: nothing to add.
        let declared = structDecl.inheritanceClause?.inheritedTypes.contains {
            $0.type.trimmedDescription.hasSuffix("RequestDeclaration")
        } ?? false
        if declared { return [] }
        let conformance: DeclSyntax = "extension \(type.trimmed): RequestDeclaration {\(raw: Self.typeNames(body))}"
        return [conformance.cast(ExtensionDeclSyntax.self)]
    }

    /// `Success` and `Failure` from the last `.responseBody(T.self)` and `.responseError(E.self)`
    /// in a `body` declared `some Request` (which hides them); nothing when the declaration
    /// names them itself (`some Request<T, E>`) or the body has none.
    private static func typeNames(_ body: PatternBindingSyntax) -> String {
        if let opaque = body.typeAnnotation?.type.as(SomeOrAnyTypeSyntax.self),
           let constraint = opaque.constraint.as(IdentifierTypeSyntax.self), constraint.genericArgumentClause != nil {
            return ""
        }
        guard let accessor = body.accessorBlock else { return "" }
        let finder = ResponseTypeFinder(viewMode: .sourceAccurate)
        finder.walk(accessor)
        var lines: [String] = []
        if let success = finder.success { lines.append("    typealias Success = \(success)") }
        if let failure = finder.failure { lines.append("    typealias Failure = \(failure)") }
        return lines.isEmpty ? "" : "\n" + lines.joined(separator: "\n") + "\n"
    }
}

/// Finds `.responseBody(T.self)` and `.responseError(E.self)` calls; the last of each wins, as
/// it does in a chain of modifiers.
final class ResponseTypeFinder: SyntaxVisitor {
    var success: String?
    var failure: String?

    override func visitPost(_ node: FunctionCallExprSyntax) {
        guard let member = node.calledExpression.as(MemberAccessExprSyntax.self),
              let argument = node.arguments.first?.expression.as(MemberAccessExprSyntax.self),
              argument.declName.baseName.text == "self", let base = argument.base else { return }
        switch member.declName.baseName.text {
        case "responseBody": self.success = base.trimmedDescription
        case "responseError": self.failure = base.trimmedDescription
        default: break
        }
    }
}
