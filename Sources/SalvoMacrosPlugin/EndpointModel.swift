import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder

/// One function of an `@API` protocol: its method and path, its parameters, how it answers.
struct EndpointModel {
    let declaration: FunctionDeclSyntax
    let name: String
    /// `.get`, or `.init("PURGE")!` for a custom method (checked to be a token, so the
    /// unwrap cannot fail).
    let method: String
    let path: String
    let scope: ScopeAttributes
    let parameters: [ParameterModel]
    /// The completion handler's name, when the endpoint takes one.
    let completion: String?
    let returnsValue: Bool
    /// `MockName.endpoint(labels:)`, for operation names and the mock's handler keys.
    let signature: String

    init?(_ function: FunctionDeclSyntax, protocolName: String, diagnostics: inout [Diagnostic]) {
        self.declaration = function
        self.name = function.name.text
        var valid = true
        func refuse(_ node: some SyntaxProtocol, _ message: APIDiagnostic, fixIts: [FixIt] = []) {
            diagnostics.append(Diagnostic(node: node, message: message, fixIts: fixIts))
            valid = false
        }

        if function.modifiers.contains(where: { $0.name.tokenKind == .keyword(.static) || $0.name.tokenKind == .keyword(.class) }) {
            refuse(function.name, .staticEndpoint)
        }
        if let generics = function.genericParameterClause {
            refuse(generics, .genericEndpoint)
        }

        // The method and the path.
        var found: (method: String, path: String)?
        var sawMethod = false
        for case .attribute(let attribute) in function.attributes {
            let verb = attribute.macroName
            let methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT"]
            guard methods.contains(verb) || verb == "HTTP" else { continue }
            if sawMethod {
                refuse(attribute, .twoMethods)
                continue
            }
            sawMethod = true
            let arguments = attribute.argumentList
            guard let pathExpression = arguments.first?.expression, let path = StringLiteral.text(of: pathExpression) else {
                refuse(attribute, .pathNotLiteral)
                continue
            }
            if verb == "HTTP" {
                guard let methodExpression = arguments.first(where: { $0.label?.text == "method" })?.expression,
                      let method = StringLiteral.text(of: methodExpression), HTTPSyntax.isToken(method) else {
                    let shown = arguments.first(where: { $0.label?.text == "method" }).map { StringLiteral.text(of: $0.expression) ?? $0.expression.trimmedDescription }
                    refuse(attribute, .methodNotToken(shown ?? ""))
                    continue
                }
                found = (".init(\(Self.quoted(method)))!", path)
            } else {
                found = ("." + verb.lowercased(), path)
            }
        }
        guard let (method, path) = found else {
            if sawMethod { return nil }
            let template = "@GET(\"/\(function.name.text)\")"
            let fixIt = FixIt(message: APIFixIt(message: "add \(template)"), changes: [
                .replace(oldNode: Syntax(function.attributes), newNode: Syntax(
                    function.attributes + [.attribute(AttributeSyntax("\(raw: template)").with(\.trailingTrivia, .newline))]))
            ])
            refuse(function.name, .noMethod(function.name.text), fixIts: [fixIt])
            return nil
        }
        self.method = method
        self.path = path
        self.scope = ScopeAttributes(function.attributes, diagnostics: &diagnostics)

        // How it answers: async throws, or a completion handler.
        let effects = function.signature.effectSpecifiers
        let isAsync = effects?.asyncSpecifier != nil
        let throwsClause = effects?.throwsClause
        let parameterList = Array(function.signature.parameterClause.parameters)
        var completion: String?
        if let last = parameterList.last, let handler = FunctionTypeInfo(last.type) {
            if isAsync {
                refuse(last, .completionAsync)
            }
            if !handler.isSendable || !handler.isEscaping {
                let missing = (handler.isEscaping ? "" : "@escaping ") + (handler.isSendable ? "" : "@Sendable ")
                let fixed = last.with(\.type, TypeSyntax("\(raw: missing)\(raw: last.type.trimmedDescription)").with(\.trailingTrivia, last.type.trailingTrivia))
                let message: APIDiagnostic = handler.isSendable ? .completionNotEscaping : .completionNotSendable
                refuse(last.type, message, fixIts: [
                    FixIt(message: APIFixIt(message: "mark the handler \(missing.trimmingCharacters)"),
                          changes: [.replace(oldNode: Syntax(last), newNode: Syntax(fixed))])
                ])
            }
            if let output = function.signature.returnClause, !["Void", "()", "CallHandle", "Salvo.CallHandle"].contains(output.type.trimmedDescription) {
                refuse(output, .completionWithReturn)
            }
            completion = (last.secondName ?? last.firstName).text
        } else if !isAsync {
            // Keep a typed throws clause the function already has.
            let specifiers = throwsClause.map { Self.asyncThrows.with(\.throwsClause, $0.with(\.trailingTrivia, .space)) } ?? Self.asyncThrows
            let fixed = function.signature.with(\.effectSpecifiers, specifiers)
            refuse(function.signature, .notAsync, fixIts: [
                FixIt(message: APIFixIt(message: "make it 'async throws'"), changes: [.replace(oldNode: Syntax(function.signature), newNode: Syntax(fixed))])
            ])
        } else if throwsClause == nil {
            let fixed = function.signature.with(\.effectSpecifiers, Self.asyncThrows)
            refuse(function.signature, .asyncWithoutThrows, fixIts: [
                FixIt(message: APIFixIt(message: "add 'throws'"), changes: [.replace(oldNode: Syntax(function.signature), newNode: Syntax(fixed))])
            ])
        }
        self.completion = completion
        self.returnsValue = function.signature.returnClause.map { !["Void", "()"].contains($0.type.trimmedDescription) } ?? false

        // The parameters and their roles, as far as spelling shows them (the compiler decides
        // in the generated code; this only finds what cannot work).
        let sent = completion == nil ? parameterList : Array(parameterList.dropLast())
        var parameters: [ParameterModel] = []
        for parameter in sent {
            if let problem = ParameterModel.unsupported(parameter) {
                refuse(parameter, .unsupportedParameter(problem))
                continue
            }
            parameters.append(ParameterModel(parameter))
        }
        self.parameters = parameters
        let labels = parameterList.map { "\($0.firstName.text):" }.joined()
        self.signature = "\(protocolName).\(function.name.text)(\(labels))"

        let placeholders = HTTPSyntax.placeholders(in: path)
        let bodyless = [".get", ".head", ".delete"].contains(method)
            || ["GET", "HEAD", "DELETE"].contains(where: { method == ".init(\"\($0)\")!" })
        let multipart = (self.scope.encoding ?? "") == ".multipart"
        var body: ParameterModel?
        var firstField: ParameterModel?
        for parameter in parameters {
            switch parameter.spelledRole {
            case "Path":
                if !placeholders.contains(parameter.key) { refuse(parameter.syntax, .pathParameterWithoutPlaceholder(parameter.key)) }
            case "Body":
                if body != nil { refuse(parameter.syntax, .twoBodies(parameter.key)) }
                body = parameter
            case "Field":
                firstField = firstField ?? parameter
            case nil:
                // Only a type known to have no role is surely a field: an alias may stand for
                // a Query or a Header, which the compiler (not the spelling) decides.
                if !placeholders.contains(parameter.key), !bodyless, !multipart, PlainType.isPlain(parameter.syntax.type) {
                    firstField = firstField ?? parameter
                }
            default:
                break
            }
        }
        if body != nil, let field = firstField {
            var fixIts: [FixIt] = []
            if field.spelledRole == nil {
                let wrapped = field.syntax.with(\.type, TypeSyntax("Query<\(raw: field.syntax.type.trimmedDescription)>").with(\.trailingTrivia, field.syntax.type.trailingTrivia))
                fixIts.append(FixIt(message: APIFixIt(message: "send '\(field.key)' as a query item"),
                                    changes: [.replace(oldNode: Syntax(field.syntax), newNode: Syntax(wrapped))]))
            }
            refuse(field.syntax, .bodyWithField(field.key), fixIts: fixIts)
        }
        for placeholder in placeholders {
            guard let parameter = parameters.first(where: { $0.key == placeholder }) else {
                refuse(function.name, .placeholderWithoutArgument(placeholder))
                continue
            }
            if let role = parameter.spelledRole, role != "Path" {
                refuse(parameter.syntax, .placeholderTakenByRole(placeholder, role: role))
            }
        }
        if !valid { return nil }
    }

    /// `async throws ` for a fix-it, after a parameter clause that ends in a space.
    private static let asyncThrows = FunctionEffectSpecifiersSyntax(
        asyncSpecifier: .keyword(.async, trailingTrivia: .space),
        throwsClause: ThrowsClauseSyntax(throwsSpecifier: .keyword(.throws, trailingTrivia: .space)))

    static func quoted(_ text: String) -> String {
        var quoted = "\""
        for character in text {
            if character == "\\" || character == "\"" { quoted.append("\\") }
            quoted.append(character)
        }
        return quoted + "\""
    }
}

/// A parameter: the name the body uses, the key it is sent under, its role if spelled.
struct ParameterModel {
    let syntax: FunctionParameterSyntax
    /// The name inside the function (the second name when there are two).
    let reference: String
    /// The wire key: the second name when there are two (`id postID: Int` sends `postID`).
    let key: String
    /// `Path`, `Query`, `Header`, `Body`, `Field` or `Part` when the type is spelled so.
    let spelledRole: String?

    init(_ parameter: FunctionParameterSyntax) {
        self.syntax = parameter
        let inner = parameter.secondName ?? parameter.firstName
        self.reference = inner.text
        self.key = inner.text.trimmingBackticks
        self.spelledRole = Self.role(of: parameter.type)
    }

    /// Why a parameter cannot be sent, if it cannot.
    static func unsupported(_ parameter: FunctionParameterSyntax) -> String? {
        if (parameter.secondName ?? parameter.firstName).tokenKind == .wildcard {
            return "a parameter without a name has no key to be sent under; name it"
        }
        if parameter.ellipsis != nil { return "a variadic parameter has no single wire value; take an array" }
        if let attributed = parameter.type.as(AttributedTypeSyntax.self),
           attributed.specifiers.contains(where: { $0.trimmedDescription.hasPrefix("inout") }) {
            return "'inout' has no meaning for a request"
        }
        if FunctionTypeInfo(parameter.type) != nil {
            return "a function is sent nowhere; only the last parameter may be a completion handler"
        }
        if parameter.type.is(SomeOrAnyTypeSyntax.self) {
            return "an opaque or existential type cannot be encoded; name a concrete type"
        }
        return nil
    }

    private static func role(of type: TypeSyntax) -> String? {
        let roles = ["Path", "Query", "Header", "Body", "Field", "Part"]
        if let identifier = type.as(IdentifierTypeSyntax.self), roles.contains(identifier.name.text) {
            return identifier.name.text
        }
        if let member = type.as(MemberTypeSyntax.self), roles.contains(member.name.text),
           ["Salvo", "SalvoMacros"].contains(member.baseType.trimmedDescription) {
            return member.name.text
        }
        if let optional = type.as(OptionalTypeSyntax.self), Self.role(of: optional.wrappedType) == "Part" {
            return "Part"
        }
        return nil
    }
}

/// Types that are surely not a role in disguise: the standard library's and Foundation's
/// values, and arrays, dictionaries and optionals of them.
enum PlainType {
    static let names: Set<String> = [
        "String", "Substring", "Character", "Bool", "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16",
        "UInt32", "UInt64", "Double", "Float", "Decimal", "Date", "Data", "UUID", "URL",
    ]

    static func isPlain(_ type: TypeSyntax) -> Bool {
        if let identifier = type.as(IdentifierTypeSyntax.self) {
            if let arguments = identifier.genericArgumentClause?.arguments {
                return ["Array", "Optional", "Set", "Dictionary"].contains(identifier.name.text)
                    && arguments.allSatisfy { argument in argument.argument.as(TypeSyntax.self).map(Self.isPlain) ?? false }
            }
            return Self.names.contains(identifier.name.text)
        }
        if let optional = type.as(OptionalTypeSyntax.self) { return Self.isPlain(optional.wrappedType) }
        if let array = type.as(ArrayTypeSyntax.self) { return Self.isPlain(array.element) }
        if let dictionary = type.as(DictionaryTypeSyntax.self) { return Self.isPlain(dictionary.key) && Self.isPlain(dictionary.value) }
        if let member = type.as(MemberTypeSyntax.self), ["Swift", "Foundation"].contains(member.baseType.trimmedDescription) {
            return Self.names.contains(member.name.text)
        }
        return false
    }
}

/// A function type, seen through `@escaping`, `@Sendable` and parentheses.
struct FunctionTypeInfo {
    let isSendable: Bool
    let isEscaping: Bool

    init?(_ type: TypeSyntax) {
        var current = type
        var sendable = false
        var escaping = false
        while true {
            if let attributed = current.as(AttributedTypeSyntax.self) {
                let names = attributed.attributes.compactMap { $0.as(AttributeSyntax.self)?.attributeName.trimmedDescription }
                sendable = sendable || names.contains("Sendable")
                escaping = escaping || names.contains("escaping")
                current = attributed.baseType
            } else if let tuple = current.as(TupleTypeSyntax.self), tuple.elements.count == 1, let only = tuple.elements.first {
                current = only.type
            } else {
                break
            }
        }
        guard current.is(FunctionTypeSyntax.self) else { return nil }
        self.isSendable = sendable
        self.isEscaping = escaping
    }
}

extension String {
    /// Without the spaces at either end.
    var trimmingCharacters: String {
        var text = Substring(self)
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return String(text)
    }

    var trimmingBackticks: String {
        self.hasPrefix("`") && self.hasSuffix("`") && self.count > 1 ? String(self.dropFirst().dropLast()) : self
    }
}
