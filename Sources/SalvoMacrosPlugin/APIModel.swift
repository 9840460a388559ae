import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder

/// An `@API` protocol as the macros read it: its name, access, scope attributes and endpoints,
/// with what is wrong with it.
struct APIModel {
    let name: String
    /// `public `, `package ` or nothing: the access the generated types and members get.
    let memberAccess: String
    /// The generated type's own access modifier (`private`/`fileprivate` included).
    let typeAccess: String
    let scope: ScopeAttributes
    let endpoints: [EndpointModel]
    var diagnostics: [Diagnostic] = []

    init(_ protocolDecl: ProtocolDeclSyntax) {
        self.name = protocolDecl.name.text
        let modifiers = protocolDecl.modifiers.map(\.name.text)
        let access = modifiers.first { ["open", "public", "package", "internal", "fileprivate", "private"].contains($0) }
        switch access {
        case "open", "public": (self.memberAccess, self.typeAccess) = ("public ", "public ")
        case "package": (self.memberAccess, self.typeAccess) = ("package ", "package ")
        case "fileprivate", "private": (self.memberAccess, self.typeAccess) = ("", "fileprivate ")
        default: (self.memberAccess, self.typeAccess) = ("", "")
        }
        var diagnostics: [Diagnostic] = []
        self.scope = ScopeAttributes(protocolDecl.attributes, diagnostics: &diagnostics)
        var endpoints: [EndpointModel] = []
        for member in protocolDecl.memberBlock.members {
            if let function = member.decl.as(FunctionDeclSyntax.self) {
                if let endpoint = EndpointModel(function, protocolName: self.name, diagnostics: &diagnostics) {
                    endpoints.append(endpoint)
                }
            } else if member.decl.is(AssociatedTypeDeclSyntax.self) {
                diagnostics.append(Diagnostic(node: member.decl, message: APIDiagnostic.associatedType))
            } else if !member.decl.is(MissingDeclSyntax.self) {
                diagnostics.append(Diagnostic(node: member.decl, message: APIDiagnostic.unsupportedMember))
            }
        }
        self.endpoints = endpoints
        self.diagnostics = diagnostics
    }

    /// `private static let <name>Endpoint = …` for each endpoint, named so that overloads do
    /// not collide.
    func endpointNames() -> [String] {
        var used = Set<String>()
        return self.endpoints.map { endpoint in
            var name = endpoint.name.trimmingBackticks + "Endpoint"
            var index = 2
            while used.contains(name) {
                name = endpoint.name.trimmingBackticks + "Endpoint\(index)"
                index += 1
            }
            used.insert(name)
            return name
        }
    }
}

/// The attributes that shape every request of a protocol or of one endpoint.
struct ScopeAttributes {
    /// `APIScope(…)` arguments, in the initializer's order.
    var headers: ExprSyntax?
    var authorization: ExprSyntax?
    var encoding: String?
    var jsonEncoder: ExprSyntax?
    var jsonDecoder: ExprSyntax?
    var formEncoder: ExprSyntax?
    var keys: ExprSyntax?
    var timeout: ExprSyntax?
    var tags: [ExprSyntax] = []
    var streamFraming: String?
    /// `Problem` from `@ErrorBody(Problem.self)`.
    var errorBody: ExprSyntax?

    init(_ attributes: AttributeListSyntax, diagnostics: inout [Diagnostic]) {
        for case .attribute(let attribute) in attributes {
            let arguments = attribute.argumentList
            switch attribute.macroName {
            case "Headers":
                if let expression = arguments.first?.expression {
                    Self.checkHeaderNames(expression, diagnostics: &diagnostics)
                    self.headers = expression
                }
            case "Authorization": self.authorization = arguments.first?.expression
            case "JSON":
                self.encoding = ".json"
                self.jsonEncoder = arguments.first { $0.label?.text == "encoder" }?.expression
                self.jsonDecoder = arguments.first { $0.label?.text == "decoder" }?.expression
            case "URLForm":
                self.encoding = ".urlForm"
                self.formEncoder = arguments.first?.expression
            case "Multipart": self.encoding = ".multipart"
            case "KeyMapping": self.keys = arguments.first?.expression
            case "Timeout": self.timeout = arguments.first?.expression
            case "Tags": self.tags += arguments.map(\.expression)
            case "JSONLines": self.streamFraming = ".jsonLines"
            case "EventStream": self.streamFraming = ".serverSentEvents"
            case "ErrorBody":
                if let member = arguments.first?.expression.as(MemberAccessExprSyntax.self), member.declName.baseName.text == "self",
                   let base = member.base {
                    self.errorBody = base
                } else {
                    diagnostics.append(Diagnostic(node: attribute, message: APIDiagnostic.errorBodyNotType))
                }
            default: break
            }
        }
    }

    var isEmpty: Bool {
        self.headers == nil && self.authorization == nil && self.encoding == nil && self.keys == nil && self.timeout == nil
            && self.tags.isEmpty && self.streamFraming == nil
    }

    /// `APIScope(…)` with what is set.
    var initializer: ExprSyntax {
        var arguments: [String] = []
        if let headers { arguments.append("headers: \(headers.trimmedDescription)") }
        if let authorization { arguments.append("authorization: \(authorization.trimmedDescription)") }
        if let encoding { arguments.append("encoding: \(encoding)") }
        if let jsonEncoder { arguments.append("jsonEncoder: \(jsonEncoder.trimmedDescription)") }
        if let jsonDecoder { arguments.append("jsonDecoder: \(jsonDecoder.trimmedDescription)") }
        if let formEncoder { arguments.append("formEncoder: \(formEncoder.trimmedDescription)") }
        if let keys { arguments.append("keys: \(keys.trimmedDescription)") }
        if let timeout { arguments.append("timeout: \(timeout.trimmedDescription)") }
        if !tags.isEmpty { arguments.append("tags: [\(tags.map(\.trimmedDescription).joined(separator: ", "))]") }
        if let streamFraming { arguments.append("streamFraming: \(streamFraming)") }
        return ExprSyntax("SalvoMacros.APIScope(\(raw: arguments.joined(separator: ", ")))")
    }

    /// Header names in a dictionary literal that HTTP does not allow.
    private static func checkHeaderNames(_ expression: ExprSyntax, diagnostics: inout [Diagnostic]) {
        guard let dictionary = expression.as(DictionaryExprSyntax.self),
              case .elements(let elements) = dictionary.content else { return }
        for element in elements {
            guard let name = StringLiteral.text(of: element.key), !HTTPSyntax.isToken(name) else { continue }
            diagnostics.append(Diagnostic(node: element.key, message: APIDiagnostic.invalidHeaderName(name)))
        }
    }
}

/// Literal text and HTTP's token grammar.
enum StringLiteral {
    /// The text of a string literal without interpolation.
    static func text(of expression: ExprSyntax) -> String? {
        guard let literal = expression.as(StringLiteralExprSyntax.self) else { return nil }
        var text = ""
        for segment in literal.segments {
            guard let plain = segment.as(StringSegmentSyntax.self) else { return nil }
            text += plain.content.text
        }
        return text
    }
}

enum HTTPSyntax {
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar))
        }
    }

    /// The `:name` (at the start of a segment) and `{name}` placeholders of a path, before its
    /// query: the same rule as the runtime's `PathTemplate`.
    static func placeholders(in path: String) -> [String] {
        let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? path.endIndex
        let characters = Array(path[..<end])
        var names: [String] = []
        var index = 0
        while index < characters.count {
            let opener = characters[index]
            let startsSegment = index == 0 || characters[index - 1] == "/"
            if (opener == ":" && startsSegment) || opener == "{" {
                var end = index + 1
                while end < characters.count, characters[end].isASCII, characters[end].isLetter || characters[end].isNumber || characters[end] == "_" {
                    end += 1
                }
                let closed = opener == ":" || (end < characters.count && characters[end] == "}")
                if end > index + 1, closed {
                    names.append(String(characters[(index + 1)..<end]))
                    index = end
                    continue
                }
            }
            index += 1
        }
        return names
    }
}
