import SwiftDiagnostics
import SwiftSyntax

/// What the macros refuse, said at the code that causes it.
enum APIDiagnostic: DiagnosticMessage {
    case notAProtocol(String)
    case unsupportedMember
    case associatedType
    case staticEndpoint
    case genericEndpoint
    case noMethod(String)
    case twoMethods
    case pathNotLiteral
    case methodNotToken(String)
    case placeholderWithoutArgument(String)
    case placeholderTakenByRole(String, role: String)
    case pathParameterWithoutPlaceholder(String)
    case twoBodies(String)
    case bodyWithField(String)
    case notAsync
    case asyncWithoutThrows
    case completionNotSendable
    case completionNotEscaping
    case completionWithReturn
    case completionAsync
    case unsupportedParameter(String)
    case invalidHeaderName(String)
    case errorBodyNotType
    case mockTypedThrows
    case markerMisplaced(String)
    case requestNotStruct
    case requestWithoutBody

    var message: String {
        switch self {
        case .notAProtocol(let macro):
            "@\(macro) applies to a protocol"
        case .unsupportedMember:
            "an @API protocol holds endpoint functions only; move this member to an extension or another type"
        case .associatedType:
            "an @API protocol cannot have associated types: each endpoint names its types"
        case .staticEndpoint:
            "an endpoint is an instance function: remove 'static'"
        case .genericEndpoint:
            "an endpoint cannot be generic: name the concrete types it sends and returns"
        case .noMethod(let name):
            "'\(name)' has no method and path: add @GET, @POST, @PUT, @PATCH, @DELETE, @HEAD, @OPTIONS, @TRACE, @CONNECT or @HTTP"
        case .twoMethods:
            "an endpoint has one method and path; remove the other attribute"
        case .pathNotLiteral:
            "the path must be a string literal without interpolation: arguments fill it through ':name' placeholders"
        case .methodNotToken(let method):
            "\"\(method)\" is not an HTTP method name (letters, digits and !#$%&'*+-.^_`|~)"
        case .placeholderWithoutArgument(let name):
            "the path's placeholder '\(name)' has no argument: add a parameter named '\(name)' (or labelled '… \(name): T')"
        case .placeholderTakenByRole(let name, let role):
            "the path's placeholder '\(name)' has no argument: the parameter '\(name)' is a \(role)"
        case .pathParameterWithoutPlaceholder(let name):
            "'\(name)' is a Path parameter but the path has no placeholder ':\(name)'"
        case .twoBodies(let name):
            "an endpoint has at most one Body parameter; '\(name)' is the second"
        case .bodyWithField(let name):
            "'\(name)' would be a body field, but the endpoint has a Body parameter: a request has a body or fields, not both"
        case .notAsync:
            "an endpoint is 'async throws', or takes a completion handler as its last parameter"
        case .asyncWithoutThrows:
            "an async endpoint throws: a request can fail"
        case .completionNotSendable:
            "the completion handler is called from another task: mark it @Sendable"
        case .completionNotEscaping:
            "the completion handler is called after the function returns: mark it @escaping"
        case .completionWithReturn:
            "an endpoint with a completion handler returns nothing (or the CallHandle that cancels it)"
        case .completionAsync:
            "an endpoint is either async or takes a completion handler, not both"
        case .unsupportedParameter(let why):
            "this parameter cannot be sent: \(why)"
        case .invalidHeaderName(let name):
            "\"\(name)\" is not a header field name"
        case .errorBodyNotType:
            "@ErrorBody takes a type: @ErrorBody(Problem.self)"
        case .mockTypedThrows:
            "@Mock needs endpoints that throw any error or ClientError, to report a call with no mock set"
        case .markerMisplaced(let name):
            "@\(name) belongs on a function of an @API or @Mock protocol (or on the protocol)"
        case .requestNotStruct:
            "@Request applies to a struct"
        case .requestWithoutBody:
            "a @Request struct declares its request as 'var body: some Request { … }'"
        }
    }

    var diagnosticID: MessageID {
        MessageID(domain: "SalvoMacros", id: String(describing: self).prefix { $0 != "(" }.description)
    }

    var severity: DiagnosticSeverity { .error }
}

/// A fix-it's title.
struct APIFixIt: FixItMessage {
    let message: String
    var fixItID: MessageID { MessageID(domain: "SalvoMacros", id: self.message) }
}
