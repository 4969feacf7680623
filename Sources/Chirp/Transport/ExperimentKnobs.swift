#if canImport(Glibc)
import Glibc
#endif

/// EXPERIMENT ONLY (to be removed before merge): A/B knobs for the bulk benchmark, read once from the environment.
enum ExperimentKnobs {
    static let unsentLimit: Int? = read("CHIRP_X_UNSENT_LIMIT")

    private static func read(_ name: String) -> Int? {
        #if canImport(Glibc)
        guard let value = getenv(name) else { return nil }
        return Int(String(cString: value))
        #else
        return nil
        #endif
    }
}
