import NIOCore

/// A handler whose work starts once its channel is active: at once when it is added to a channel that is active
/// already (an accepted one), else at `channelActive` (a dialed one). ``HandshakeHandler`` (its hello and deadline)
/// and ``HeartbeatHandler`` (its clocks).
protocol StartsWhenActive: ChannelInboundHandler {
    /// Starts the handler's work. It may be called twice (added to an active channel that then reports itself active):
    /// the work starts once.
    func start(context: ChannelHandlerContext)
}

extension StartsWhenActive {
    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }
}
