import Logging

/// The demo's varied records and HTTP scenarios.
enum DemoRecords {
    struct Scenario: Sendable {
        var method: String
        var path: String
        var body: String?
        var authorized: Bool
    }

    static let scenarios: [Scenario] = [
        Scenario(method: "GET", path: "/items", body: nil, authorized: false),
        Scenario(
            method: "POST", path: "/orders",
            body: #"{"item":2,"quantity":3,"note":"Extra wasabi, s'il vous plaît — merci!"}"#, authorized: true),
        Scenario(method: "GET", path: "/items/7", body: nil, authorized: false),
        Scenario(method: "GET", path: "/items/1", body: nil, authorized: false),
        Scenario(method: "GET", path: "/fail", body: nil, authorized: false)
    ]

    private static let customers = ["Zoë", "Björn", "Ana", "李雷", "Olu"]

    /// Logs record number `n`: mostly info, some debug/trace, a warning, an error and a rare critical.
    static func log(_ n: Int, loggers: [Logger]) {
        let logger = loggers[n % loggers.count]
        let customer = customers[n % customers.count]
        switch n % 20 {
        case 0:
            logger.warning("slow response from inventory", metadata: ["elapsed_ms": "\(180 + n % 70)", "n": "\(n)"])
        case 7:
            logger.error(
                "payment declined", metadata: ["customer": "\(customer)", "code": "card_declined", "n": "\(n)"])
        case 13:
            logger.debug("cache miss", metadata: ["key": "item:\(n % 50)", "n": "\(n)"])
        case 17:
            logger.trace("heartbeat", metadata: ["n": "\(n)"])
        default:
            if n % 250 == 0 {
                logger.critical("disk almost full", metadata: ["free_mb": "\(n % 100)", "n": "\(n)"])
            } else {
                logger.info(
                    "order placed by \(customer)",
                    metadata: [
                        "order": "\(1000 + n)", "amount": "\(n % 90 + 10).\(n % 100)", "n": "\(n)",
                        "items": .array([.string("item:\(n % 7)"), .string("item:\(n % 11)")])
                    ])
            }
        }
    }
}
