extension Result {
    /// The error, or `nil` on success.
    package var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
