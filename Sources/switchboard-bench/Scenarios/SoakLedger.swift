import Dispatch
import Foundation
import Switchboard

/// What one permanent observer saw of one send.
struct SoakSighting: Sendable {
    var started: Int8 = 0
    var terminal: Int8 = 0
    /// 1 started, 2 succeeded, 3 failed, 4 cancelled, 5 cached.
    var first: UInt8 = 0
    var last: UInt8 = 0
    var sendID: UInt64 = 0
    var mixedIDs = false
}

/// One soak send: fixed size, so the books don't grow while memory is measured.
struct SoakRecord: Sendable {
    var allowed: Float = 0
    var start: UInt64 = 0
    var end: UInt64 = 0
    var completions: Int8 = 0
    /// The completion's outcome, coded as a sighting's kinds.
    var outcome: UInt8 = 0
    var observers = (SoakSighting(), SoakSighting())
}

/// The soak's books: every send by its number, what each permanent observer saw of it, and the
/// churning observers' deliveries. Allocated and touched before the run, so its memory isn't counted
/// as growth. Checked at the end: one completion per send; at each permanent observer `started` first,
/// then exactly one terminal event, matching the completion, all of one send id; no send over its
/// deadlines by more than a second.
final class SoakLedger: Sendable {
    private let records: Locked<[SoakRecord]>
    private let churnDeliveries = Locked(0)
    static let names = ["-", "started", "succeeded", "failed", "cancelled", "cached"]

    init(capacity: Int) {
        records = Locked([SoakRecord](repeating: SoakRecord(), count: capacity))
    }

    func started(_ tag: Int, allowed: TimeInterval) {
        let now = DispatchTime.now().uptimeNanoseconds
        records.withLock { records in
            guard tag < records.count else { return }
            records[tag].allowed = Float(allowed)
            records[tag].start = now
        }
    }

    func completed(_ tag: Int, outcome: UInt8) {
        let now = DispatchTime.now().uptimeNanoseconds
        records.withLock { records in
            guard tag < records.count else { return }
            records[tag].completions &+= 1
            records[tag].outcome = outcome
            if records[tag].end == 0 { records[tag].end = now }
        }
    }

    static func code(_ kind: RequestEvent<SoakGet>.Kind) -> UInt8? {
        switch kind {
        case .started: 1
        case .succeeded: 2
        case .failed: 3
        case .cancelled: 4
        case .cached: 5
        case .progress: nil
        }
    }

    func saw(_ event: RequestEvent<SoakGet>, by observer: Int) {
        guard let code = Self.code(event.kind) else { return }
        let tag = event.request.tag
        records.withLock { records in
            guard tag < records.count else { return }
            func note(_ sighting: inout SoakSighting) {
                if code == 1 { sighting.started &+= 1 } else { sighting.terminal &+= 1 }
                if sighting.first == 0 { sighting.first = code; sighting.sendID = event.sendID }
                if sighting.sendID != event.sendID { sighting.mixedIDs = true }
                sighting.last = code
            }
            if observer == 0 { note(&records[tag].observers.0) } else { note(&records[tag].observers.1) }
        }
    }

    func churned() { churnDeliveries.withLock { $0 += 1 } }
    var churnCount: Int { churnDeliveries.withLock { $0 } }

    /// Every broken promise among sends `range`, one line each (at most `limit`).
    func violations(_ range: Range<Int>, plan: (Int) -> String, limit: Int = 20) -> [String] {
        let all = records.withLock { Array($0[range]) }
        var problems: [String] = []
        for (offset, record) in all.enumerated() where problems.count < limit {
            let tag = range.lowerBound + offset
            let outcome = Self.names[Int(record.outcome)]
            func describe(_ s: SoakSighting) -> String {
                "started×\(s.started) terminal×\(s.terminal) first \(Self.names[Int(s.first)]) last \(Self.names[Int(s.last)])\(s.mixedIDs ? " mixed ids" : "")"
            }
            let history = "completions \(record.completions) (\(outcome)); immediate: \(describe(record.observers.0)); queued: \(describe(record.observers.1))"
            var what: [String] = []
            if record.start == 0 { what.append("never started") }
            if record.completions != 1 { what.append("completion called \(record.completions) times") }
            if record.end != 0 {
                let took = Double(record.end &- record.start) / 1e9
                if took > Double(record.allowed) + 1 { what.append(String(format: "took %.2f s, allowed %.2f s + 1 s", took, record.allowed)) }
            }
            for (name, sighting) in [("immediate", record.observers.0), ("queued", record.observers.1)] {
                if sighting.started != 1 || sighting.first != 1 { what.append("the \(name) observer did not see one `started` first") }
                if sighting.terminal != 1 || sighting.last != record.outcome { what.append("the \(name) observer's terminal events don't match the completion") }
                if sighting.mixedIDs { what.append("the \(name) observer saw several send ids") }
            }
            if !what.isEmpty { problems.append("send \(tag) \(plan(tag)): \(what.joined(separator: "; ")) [\(history)]") }
        }
        return problems
    }
}

extension SoakLedger {
    /// Proves the checks can fail: a ledger with one send of each broken kind must report each. Run
    /// before every soak, so a check that stopped working fails the soak instead of passing it.
    static func selfCheck() throws {
        let ledger = SoakLedger(capacity: 5)
        for tag in 0..<5 {
            // Send 4 is allowed less than no time, so it is late.
            ledger.started(tag, allowed: tag == 4 ? -2 : 0.1)
            let request = SoakGet(path: "/", tag: tag)
            for observer in 0..<2 {
                ledger.saw(RequestEvent(.started(request), sendID: UInt64(tag)), by: observer)
                // Send 2: the wrong send id at one observer.
                let id: UInt64 = tag == 2 && observer == 1 ? 99 : UInt64(tag)
                ledger.saw(RequestEvent(.failed(request, .cancelled), sendID: id), by: observer)
                // Send 1: a second terminal event at one observer.
                if tag == 1, observer == 0 { ledger.saw(RequestEvent(.failed(request, .cancelled), sendID: 1), by: 0) }
            }
            // Send 3: completed twice; send 0: as it should be.
            ledger.completed(tag, outcome: 3)
            if tag == 3 { ledger.completed(tag, outcome: 3) }
        }
        let found = ledger.violations(0..<5) { _ in "/" }
        let broken = Set(found.compactMap { $0.split(separator: " ").dropFirst().first.flatMap { Int($0) } })
        guard broken == [1, 2, 3, 4] else {
            throw BenchError("soak: the checks are broken: expected sends 1–4 reported, got \(found)")
        }
    }
}

/// An observer that joins and leaves while the soak runs.
final class ChurnObserver: Sendable {}
