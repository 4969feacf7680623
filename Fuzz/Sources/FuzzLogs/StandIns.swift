// Stand-ins for the two types that LogJSON's viewer notices take: the real ones need the Chirp module's peers and
// handshake. This target calls LogJSON.line only, which uses neither.

/// Stands in for ChirpLogs' `LogSourceInfo` (the fields LogJSON.notice reads).
package struct LogSourceInfo {
    package var appName = ""
    package var host = ""
    package var processID: Int32 = 0
    package var streamID = ""
}

/// Stands in for ChirpLogs' `LogSourceRefusal` (the fields LogJSON.refusal reads).
package struct LogSourceRefusal: CustomStringConvertible {
    package enum Kind { case secretRequired, secretMismatch, sourceHasNoSecret, notAccepted, other }
    package var source = ""
    package var info: LogSourceInfo?
    package var kind = Kind.other
    package var description: String { source }
}
