import Foundation
import Testing

@testable import ChirpConsole

/// The search's regular expressions on their own: a match, no match, and the deadline before and during a match.
@Suite(.timeLimit(.minutes(1))) struct RegexSQLFunctionTests {
    static let farAway = UInt64.max

    @Test func aPatternMatchesAnywhereInTheTextOrNot() throws {
        let regex = try #require(RegexSQLFunction.compiled("dec[a-z]+ed"))
        #expect(try RegexSQLFunction.matches(regex, in: "payment card_declined at 10:02", deadline: Self.farAway))
        #expect(try !RegexSQLFunction.matches(regex, in: "payment accepted", deadline: Self.farAway))
        #expect(try !RegexSQLFunction.matches(regex, in: "", deadline: Self.farAway))
    }

    @Test func aPatternThatIsNotARegularExpressionIsNotCompiled() {
        #expect(RegexSQLFunction.compiled("(unclosed") == nil)
        // Control: the same text escaped is one.
        #expect(RegexSQLFunction.compiled("\\(unclosed") != nil)
    }

    @Test func aCallAtOrAfterTheDeadlineFailsWithoutMatching() throws {
        let regex = try #require(RegexSQLFunction.compiled("a"))
        #expect(throws: RegexSQLFunction.TimedOut.self) {
            try RegexSQLFunction.matches(regex, in: "a", deadline: 100, clock: { 100 })
        }
        // Control: one nanosecond earlier it runs, and finds the match.
        #expect(try RegexSQLFunction.matches(regex, in: "a", deadline: 100, clock: { 99 }))
    }

    @Test func aMatchThatRunsPastTheDeadlineIsStopped() throws {
        // `(a+)+$` over a run of `a` that ends in `!` backtracks without end: only the deadline stops it.
        let regex = try #require(RegexSQLFunction.compiled("(a+)+$"))
        let text = String(repeating: "a", count: 40) + "!"
        let start = RegexSQLFunction.now()
        #expect(throws: RegexSQLFunction.TimedOut.self) {
            try RegexSQLFunction.matches(regex, in: text, deadline: start + 50_000_000)
        }
        // Stopped near its deadline, not at the end of the backtracking (which would take far longer than this limit).
        #expect(RegexSQLFunction.now() - start < 10_000_000_000)
    }

    @Test func aTimedOutQueryIsToldFromOtherFailuresByItsMessage() {
        #expect(RegexSQLFunction.TimedOut().description == RegexSQLFunction.TimedOut.marker)
        #expect(!RegexSQLFunction.timedOut(RegexSQLFunction.TimedOut()))  // only as SQLite reports it
    }

    @Test func theDeadlineIsTheBudgetFromNow() {
        let before = RegexSQLFunction.now()
        let deadline = UInt64(RegexSQLFunction.deadline())
        let after = RegexSQLFunction.now()
        let budget = UInt64(RegexSQLFunction.budget.components.seconds) * 1_000_000_000
        #expect(deadline >= before + budget && deadline <= after + budget)
    }
}
