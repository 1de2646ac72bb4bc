import Testing

/// The gate that limits how many test cases run at once under a sanitizer (``admission``): a task past
/// its places waits, suspended, until one leaves, and the longest waiter goes first.
@Suite(hangGuard, admission) struct AdmissionGateTests {
    @Test func aTaskPastThePlacesWaitsUntilOneLeavesAndWaitersGoInOrder() async throws {
        let gate = AdmissionGate(places: 2)
        await gate.enter()
        await gate.enter()
        let order = Box<[Int]>([])
        let third = Task {
            await gate.enter()
            order.mutate { $0.append(3) }
        }
        // The third is queued before the fourth (its continuation is stored before the fourth starts).
        #expect(await eventually(timeout: 20) { gate.waiting == 1 })
        let fourth = Task {
            await gate.enter()
            order.mutate { $0.append(4) }
        }
        #expect(await eventually(timeout: 20) { gate.waiting == 2 })
        #expect(order.value.isEmpty, "admitted past the places")
        gate.leave()
        #expect(await eventually(timeout: 20) { order.value == [3] })
        gate.leave()
        await third.value
        await fourth.value
        #expect(order.value == [3, 4])
        #expect(gate.waiting == 0)
    }

    @Test func withoutASanitizerNothingIsLimited() {
        #expect((admission.gate == nil) == !(runsUnderThreadSanitizer || runsUnderAddressSanitizer))
    }
}
