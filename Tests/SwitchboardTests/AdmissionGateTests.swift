import Testing

/// The limit on test cases at once under a sanitizer (``admission``): a task past the places waits,
/// suspended, until one leaves; the longest waiter goes first; a handed-over place is not counted
/// twice; a cancelled waiter leaves without a place; the trait runs a case's body only inside a place.
/// Every wait here is bounded: a broken gate fails these tests rather than hanging the run.
@Suite(hangGuard, admission) struct AdmissionGateTests {
    /// Enters `gate` in a task of its own, appending `label` to `order` once admitted; `outcome` says
    /// what `enter` returned, once it has (read with a bounded wait, never by awaiting the task).
    @discardableResult
    func entering(_ gate: AdmissionGate, _ label: Int, _ order: Box<[Int]>, outcome: Box<Bool?> = Box(nil)) -> Task<Void, Never> {
        Task {
            let admitted = await gate.enter()
            if admitted { order.mutate { $0.append(label) } }
            outcome.mutate { $0 = admitted }
        }
    }

    @Test func aTaskPastThePlacesWaitsUntilOneLeavesAndWaitersGoInOrder() async throws {
        let gate = AdmissionGate(places: 2)
        #expect(await gate.enter())
        #expect(await gate.enter())
        let order = Box<[Int]>([])
        entering(gate, 3, order)
        // The third is queued before the fourth is made.
        try #require(await eventually(timeout: 20) { gate.waiting == 1 })
        entering(gate, 4, order)
        try #require(await eventually(timeout: 20) { gate.waiting == 2 })
        #expect(order.value.isEmpty, "admitted past the places")
        gate.leave()
        #expect(await eventually(timeout: 20) { order.value == [3] })
        gate.leave()
        #expect(await eventually(timeout: 20) { order.value == [3, 4] })
        // Both places were handed over, not freed: a fifth still waits.
        entering(gate, 5, order)
        #expect(await eventually(timeout: 20) { gate.waiting == 1 })
        #expect(order.value == [3, 4], "a handed-over place was counted as free too")
        gate.leave()
        #expect(await eventually(timeout: 20) { order.value == [3, 4, 5] })
        // A place freed with nobody waiting is taken by the next to come.
        gate.leave()
        entering(gate, 6, order)
        #expect(await eventually(timeout: 20) { order.value == [3, 4, 5, 6] }, "a freed place was not kept")
    }

    @Test func aCancelledWaiterLeavesWithoutAPlace() async throws {
        let gate = AdmissionGate(places: 1)
        #expect(await gate.enter())
        let order = Box<[Int]>([])
        let outcome = Box<Bool?>(nil)
        let cancelled = entering(gate, 2, order, outcome: outcome)
        try #require(await eventually(timeout: 20) { gate.waiting == 1 })
        cancelled.cancel()
        #expect(await eventually(timeout: 20) { outcome.value == false }, "the cancelled waiter still waits")
        #expect(gate.waiting == 0)
        // The place held all along is the only one: the next waiter gets it when it is left.
        entering(gate, 3, order)
        try #require(await eventually(timeout: 20) { gate.waiting == 1 })
        gate.leave()
        #expect(await eventually(timeout: 20) { order.value == [3] })
        // Cancelled before it asks: no place, no wait.
        let early = Box<Bool?>(nil)
        Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let admitted = await gate.enter()
            early.mutate { $0 = admitted }
        }
        #expect(await eventually(timeout: 20) { early.value == false })
        #expect(gate.waiting == 0)
    }

    /// Run under a sanitizer, this case itself holds a place of the suite's `admission`: the gate here
    /// is another one, which that place must not open.
    @Test func theTraitRunsACaseOnlyInsideAPlaceAndNeverAsksTwice() async throws {
        let limited = Admission(places: 1)
        let test = try #require(Test.current)
        #expect(limited.scopeProvider(for: test, testCase: nil) == nil, "a place for the suite or the function around the cases")
        let scope = try #require(limited.scopeProvider(for: test, testCase: Test.Case.current))
        #expect(Admission(places: nil).scopeProvider(for: test, testCase: Test.Case.current) == nil, "no limit, no scope")
        let inside = Box(0), most = Box(0), ran = Box(0)
        let body: @Sendable () async throws -> Void = {
            let now = inside.mutate { value -> Int in
                value += 1
                return value
            }
            most.mutate { $0 = max($0, now) }
            try await Task.sleep(nanoseconds: 20_000_000)
            inside.mutate { $0 -= 1 }
            ran.mutate { $0 += 1 }
        }
        // In tasks of their own, so that a gate that never admits fails the wait below, not the run.
        for _ in 0..<4 { Task { try await scope.provideScope(for: test, testCase: nil, performing: body) } }
        #expect(await eventually(timeout: 20) { ran.value == 4 })
        #expect(most.value == 1, "\(most.value) cases ran at once with one place")
        // Nested (the trait applied twice): the inner scope runs in the outer one's place.
        let nested = Box(false)
        Task {
            try await scope.provideScope(for: test, testCase: nil) {
                try await scope.provideScope(for: test, testCase: nil) { nested.mutate { $0 = true } }
            }
        }
        #expect(await eventually(timeout: 20) { nested.value }, "a case holding a place waited for a second")
    }

    @Test func theSuitesLimitIsSixteenUnderASanitizerAndNoneWithout() async throws {
        let test = try #require(Test.current)
        let scope = admission.scopeProvider(for: test, testCase: Test.Case.current)
        #expect((scope != nil) == (runsUnderThreadSanitizer || runsUnderAddressSanitizer))
        if runsUnderThreadSanitizer || runsUnderAddressSanitizer {
            let gate = try #require(admission.gate)
            #expect(gate.places == 16)
            // This case holds one of them.
            #expect(Admission.heldGates.contains(ObjectIdentifier(gate)))
        } else {
            #expect(admission.gate == nil && Admission.heldGates.isEmpty)
        }
    }
}
