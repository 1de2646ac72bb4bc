/// Something that follows a request's life, such as a loading indicator: the Swift form of
/// YTKNetwork's `YTKRequestAccessory`, as an ``EventMonitor`` with YTKNetwork's three calls. Every
/// method has an empty default. Add accessories to ``Configuration/monitors`` (every request) or a
/// request's ``RequestPipeline/monitors``.
///
/// The order for one send: ``willStart(_:)`` → (the network) → response hooks → ``willStop(_:error:)`` →
/// observers and the closure → ``didStop(_:error:)``.
/// - `willStart` runs on the thread that calls `send`, before observers hear `started`.
/// - `willStop` and `didStop` run on ``Configuration/callbackQueue``. Observers and closures on that same
///   queue run between them; on other queues their order against `didStop` is not fixed.
public protocol RequestAccessory: EventMonitor {
    /// The request is about to start.
    func willStart(_ request: any Request)
    /// The request finished (`error` is `nil` on success); observers haven't heard yet.
    func willStop(_ request: any Request, error: NetworkError?)
    /// Observers and the closure on the callback queue have run.
    func didStop(_ request: any Request, error: NetworkError?)
}

extension RequestAccessory {
    public func willStart(_ request: any Request) {}
    public func willStop(_ request: any Request, error: NetworkError?) {}
    public func didStop(_ request: any Request, error: NetworkError?) {}

    /// Calls ``willStart(_:)``.
    public func requestDidStart(_ send: SendContext) { willStart(send.request) }
    /// Calls ``willStop(_:error:)``.
    public func requestWillDeliver(_ send: SendContext, error: NetworkError?) { willStop(send.request, error: error) }
    /// Calls ``didStop(_:error:)``.
    public func requestDidDeliver(_ send: SendContext, error: NetworkError?) { didStop(send.request, error: error) }
}
