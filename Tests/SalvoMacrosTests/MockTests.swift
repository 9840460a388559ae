import Foundation
import SalvoMacros
import Testing

/// `@Mock` types answer with the closures a test sets, see every argument as passed, report
/// an endpoint with no closure as an error (thrown or handed to the completion handler), and
/// can be set and called from many tasks at once.
@Suite struct MockTests {
    /// Code under test that depends on the protocol only.
    struct Counter {
        let users: any Users
        func count(named name: String) async throws -> Int { try await self.users.search(name: name).count }
    }

    @Test func aHandlerSeesTheArgumentsAndAnswers() async throws {
        let mock = UsersMock()
        mock.mockSearch { name in
            #expect(name == "ada")
            return [User(id: 1, name: "Ada"), User(id: 9, name: "Ada II")]
        }
        #expect(try await Counter(users: mock).count(named: "ada") == 2)
    }

    @Test func wrappedArgumentsCompareWithLiterals() async throws {
        let mock = EchoesMock()
        mock.mockRepository { username, id in
            #expect(username == "ada")
            #expect(id == 7)
            return Echo(method: "GET", path: "/mocked", query: "", headers: [], body: "")
        }
        #expect(try await mock.repository(username: "ada", id: 7).path == "/mocked")
    }

    @Test func anEndpointWithoutAHandlerThrows() async throws {
        let mock = UsersMock()
        do {
            _ = try await mock.user(id: 1)
            Issue.record("an endpoint with no mock answered")
        } catch let error as ClientError {
            #expect(error.code == .invalidRequest)
            #expect(error.detail?.contains("UsersMock") == true)
        }
        // Typed throws: the same error, typed.
        await #expect(throws: ClientError.self) { try await mock.checked(id: 1) }
    }

    @Test func completionHandlersAreMockedToo() async throws {
        let mock = UsersMock()
        let unmocked: Result<User, any Error> = await withCheckedContinuation { continuation in
            mock.callback(id: 1) { continuation.resume(returning: $0) }
        }
        #expect((try? unmocked.get()) == nil)

        mock.mockCallback { id, completion in completion(.success(User(id: id, name: "mocked"))) }
        let answered: User = try await withCheckedThrowingContinuation { continuation in
            mock.callback(id: 5) { continuation.resume(with: $0) }
        }
        #expect(answered == User(id: 5, name: "mocked"))
    }

    @Test func setAndCalledFromManyTasks() async throws {
        let mock = UsersMock()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<64 {
                group.addTask {
                    if index.isMultiple(of: 8) {
                        mock.mockUser { id in User(id: id, name: "n") }
                    }
                    _ = try? await mock.user(id: index)
                }
            }
            try await group.waitForAll()
        }
        #expect(try await mock.user(id: 3) == User(id: 3, name: "n"))
    }
}
