import ArgumentParser

/// The options of the commands that join a service type as a peer (listen, send, ping): the peer options and the
/// common ones, each under its own title in `--help`.
struct PeerCommandOptions: ParsableArguments {
    @OptionGroup(title: "Peer Options")
    var join: JoinOptions

    @OptionGroup(title: "Common Options")
    var common: CommonOptions

    /// Refuses `--peer` (`peer`, when given) with `--connect`: one picks a discovered peer, the other skips discovery.
    func checkPeerSelection(_ peer: String?) throws {
        if peer != nil && join.connect != nil {
            throw ValidationError("use either --peer (pick a discovered peer) or --connect (skip discovery), not both")
        }
    }
}
