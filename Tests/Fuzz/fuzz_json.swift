// Target: JSON.parse(_: Data) (Sources/Switchboard/Core/JSON/).
// Checks: no trap/overflow/out-of-bounds; errors carry an offset within the input; a parsed value
// serializes (compact/sorted/pretty) to text that re-parses to the same value (doubles bit-exact).
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Data(bytes: data, count: size)
    let value: JSON
    do {
        value = try JSON.parse(input)
    } catch {
        expect("offset", error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside 0...\(size): \(error)")
        _ = error.description
        return 0
    }
    for (sorted, pretty) in [(false, false), (true, false), (true, true)] {
        let serialized = value.serialized(sortedKeys: sorted, prettyPrinted: pretty)
        let again: JSON
        do {
            again = try JSON.parse(serialized)
        } catch {
            fatalError("[reparse] serialized() output does not re-parse (\(error)): \(String(decoding: serialized, as: UTF8.self).debugDescription)")
        }
        expect(
            "roundtrip", sameValue(again, value),
            "round trip changed the value: \(value) -> \(String(decoding: serialized, as: UTF8.self).debugDescription) -> \(again)")
    }
    _ = value.description
    _ = value.int; _ = value.int64; _ = value.double; _ = value[0]; _ = value[""]
    return 0
}

/// `==`, but doubles compared bit for bit (so `-0.0` vs `0.0` counts); the parser never makes NaN.
func sameValue(_ a: JSON, _ b: JSON) -> Bool {
    switch (a, b) {
    case (.double(let x), .double(let y)):
        return x.bitPattern == y.bitPattern
    case (.array(let x), .array(let y)):
        return x.count == y.count && zip(x, y).allSatisfy(sameValue)
    case (.object(let x), .object(let y)):
        guard x.count == y.count else { return false }
        for (key, value) in x {
            guard let other = y[key], sameValue(value, other) else { return false }
        }
        return true
    default:
        return a == b
    }
}
