extension Dispatcher {
    /// Sends requests of any types together and returns their responses as a typed tuple, in order:
    /// YTKNetwork's batch without the casting (`(GetImageApi *)requests[0]`).
    ///
    /// ```swift
    /// let (a, b, c, user) = try await Dispatcher.shared.batch(
    ///     GetImage("1.jpg"), GetImage("2.jpg"), GetImage("3.jpg"), GetUserInfo(id: "123"))
    /// user.json["user"]["name"]
    /// ```
    /// Fail-fast: the first failure cancels the others and is thrown; cancelling the calling task
    /// cancels them all. For other failure modes, a concurrency limit, closures or a delegate, use
    /// ``BatchRequest``.
    /// - Throws: ``GroupError`` naming the request that failed.
    public func batch<each R: Request>(_ requests: repeat each R, maximumConcurrency: Int? = nil) async throws(GroupError) -> (repeat Response<each R>) {
        var list: [any Request] = []
        for request in repeat each requests { list.append(request) }
        let responses = try await BatchRequest(list, maximumConcurrency: maximumConcurrency, dispatcher: self).run()
        let cursor = Cursor(responses)
        return (repeat cursor.next((each R).self))
    }
}

/// Hands out a batch's responses in order, each as its request's type.
private final class Cursor {
    private let responses: [any AnyResponse]
    private var index = 0

    init(_ responses: [any AnyResponse]) {
        self.responses = responses
    }

    func next<R: Request>(_ type: R.Type) -> Response<R> {
        defer { index += 1 }
        // The batch returns one response per request, in order, each the response to that request.
        return responses[index] as! Response<R>
    }
}
