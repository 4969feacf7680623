import Foundation
import HTTPTypes
import Hummingbird

/// Every request passes here first: the token (when one is set), the host a browser thinks it talks to (when none is
/// set), and the security headers of every response.
struct ConsoleGate<Context: RequestContext>: RouterMiddleware {
    let token: String?

    static var cookieName: String { "chirp_console_token" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var setCookie: String?
        if let token {
            switch Self.presentedToken(request) {
            case (let presented?, let fromQuery) where Self.constantTimeEquals(presented, token):
                // Given in the URL: the page's own requests (scripts, styles, the live stream) then carry a cookie.
                if fromQuery { setCookie = "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict" }
            case (nil, _):
                return Self.secured(
                    ConsoleHTTP.failure(
                        .unauthorized,
                        "this console needs its token: open the URL chirp-console printed (…/?token=…), or send Authorization: Bearer TOKEN"
                    ))
            default:
                return Self.secured(ConsoleHTTP.failure(.unauthorized, "wrong token"))
            }
        } else if let authority = request.head.authority, !Self.isLocalAuthority(authority) {
            // Without a token the console listens on loopback only; a page of another site that a DNS trick points at
            // 127.0.0.1 still says its own name in Host, and is turned away.
            return Self.secured(ConsoleHTTP.failure(.forbidden, "this console answers to 127.0.0.1 and localhost only"))
        }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            // The router's own answers (no such path, or no such method on it) carry a JSON body like every other.
            response = ConsoleHTTP.failure(error.status, Self.message(for: error, request))
        }
        if let setCookie, let name = HTTPField.Name("Set-Cookie") { response.headers[name] = setCookie }
        return Self.secured(response)
    }

    /// What the router's error means for the request, in a sentence (the path quoted as untrusted text).
    static func message(for error: any HTTPResponseError, _ request: Request) -> String {
        let what = "\(request.method.rawValue) \(RecordFilter.quote(request.uri.path))"
        switch error.status {
        case .notFound:
            return "no such path: \(what); the console answers GET on /, /assets/FILE and /api/... (Docs/Console.md)"
        default:
            return "\(what): \(error.status.reasonPhrase.lowercased())"
        }
    }

    /// The token a request carries, and whether it came in the query string.
    static func presentedToken(_ request: Request) -> (String?, Bool) {
        if let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") {
            return (String(authorization.dropFirst("Bearer ".count)), false)
        }
        if let token = QueryString.parse(request.uri.query)["token"] { return (token, true) }
        if let cookies = request.headers[.cookie] {
            for cookie in cookies.split(separator: ";") {
                let parts = cookie.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0] == cookieName { return (String(parts[1]), false) }
            }
        }
        return (nil, false)
    }

    /// Compares without stopping at the first difference, so that response times do not reveal the token.
    static func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
        let a = Array(lhs.utf8)
        let b = Array(rhs.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }

    static func isLocalAuthority(_ authority: String) -> Bool {
        var host = Substring(authority)
        if host.hasPrefix("[") {
            host = host.dropFirst().prefix { $0 != "]" }
        } else if let colon = host.lastIndex(of: ":") {
            host = host[..<colon]
        }
        return ConsoleConfiguration.isLoopback(String(host).lowercased())
    }

    /// The headers every response carries: the page runs only its own script and style files, is never framed, and
    /// nothing is sniffed or cached.
    static func secured(_ response: Response) -> Response {
        var response = response
        for (name, value) in ConsoleHTTP.securityHeaders { response.headers[name] = value }
        return response
    }
}

/// Responses and header names of the console's server.
enum ConsoleHTTP {
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"

    static let securityHeaders: [(HTTPField.Name, String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store")
    ].compactMap { name, value in HTTPField.Name(name).map { ($0, value) } }

    static func json(_ data: Data, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func document<T: Encodable>(_ document: T) -> Response {
        do {
            return json(try APIDocuments.encode(document))
        } catch {
            return failure(.internalServerError, "could not encode the answer: \(error)")
        }
    }

    static func failure(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let data =
            (try? APIDocuments.encode(APIDocuments.Failure(error: message))) ?? Data(#"{"error":"failure"}"#.utf8)
        return json(data, status: status)
    }
}
