import SwiftCompilerPlugin
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

@main
struct SalvoMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        APIMacro.self,
        MockMacro.self,
        MarkerMacro.self,
        RequestMacro.self,
    ]
}

/// The attributes `@API` and `@Mock` read (`@GET`, `@Headers`, `@KeyMapping`…): they write
/// nothing themselves, but say so when they are put where nothing reads them.
public struct MarkerMacro: PeerMacro {
    public static func expansion(of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
                                 in context: some MacroExpansionContext) throws -> [DeclSyntax] {
        if declaration.is(FunctionDeclSyntax.self) || declaration.is(ProtocolDeclSyntax.self) {
            return []
        }
        context.diagnose(Diagnostic(node: node, message: APIDiagnostic.markerMisplaced(node.macroName)))
        return []
    }
}

extension AttributeSyntax {
    /// The attribute's name without a module: `GET` for `@SalvoMacros.GET`.
    var macroName: String {
        let name = self.attributeName.trimmedDescription
        return name.split(separator: ".").last.map(String.init) ?? name
    }

    /// The arguments, labelled or not.
    var argumentList: [LabeledExprSyntax] {
        if case .argumentList(let list)? = self.arguments { return Array(list) }
        return []
    }
}
