import Foundation

/// PEM text (RFC 7468): `-----BEGIN <label>-----`, base64 lines, `-----END <label>-----`.
enum PEM {
    /// The decoded bytes of every block with `label` (or, with `labelSuffix`, any label ending in it).
    /// - Throws: ``TrustPolicyError`` for a block that is not closed or whose base64 doesn't decode.
    static func blocks(in pem: Data, label: String) throws(TrustPolicyError) -> [Data] {
        try labelledBlocks(in: pem).filter { $0.label == label }.map(\.bytes)
    }

    /// Every block of the text with its label, in order.
    static func labelledBlocks(in pem: Data) throws(TrustPolicyError) -> [(label: String, bytes: Data)] {
        guard let text = String(data: pem, encoding: .utf8) else { throw TrustPolicyError(reason: "the PEM text is not UTF-8") }
        var blocks: [(label: String, bytes: Data)] = []
        var open: (label: String, body: String)?
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if let current = open {
                if line.hasPrefix("-----END ") {
                    guard line == "-----END \(current.label)-----" else {
                        throw TrustPolicyError(reason: "a PEM block \(current.label) ends with \(line)")
                    }
                    guard let bytes = Data(base64Encoded: current.body), !bytes.isEmpty else {
                        throw TrustPolicyError(reason: "a PEM block \(current.label) is not valid base64")
                    }
                    blocks.append((current.label, bytes))
                    open = nil
                } else if line.contains(":") {
                    continue  // an encapsulated header (Proc-Type, DEK-Info): kept out of the base64
                } else {
                    open = (current.label, current.body + line)
                }
            } else if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----"), line.count > 16 {
                let label = String(line.dropFirst(11).dropLast(5))
                open = (label, "")
            }
        }
        if let open { throw TrustPolicyError(reason: "a PEM block \(open.label) is not closed") }
        return blocks
    }

    /// `bytes` as one PEM block, base64 in lines of 64 characters.
    static func encode(_ bytes: Data, label: String) -> String {
        let base64 = bytes.base64EncodedString()
        var text = "-----BEGIN \(label)-----\n"
        var index = base64.startIndex
        while index < base64.endIndex {
            let end = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            text += base64[index..<end] + "\n"
            index = end
        }
        return text + "-----END \(label)-----\n"
    }
}

/// Just enough DER (X.690) to find a certificate's SubjectPublicKeyInfo: lengths checked against the
/// bytes at every step, so no input can read out of bounds.
enum DERReader {
    /// One element: its tag, and where its contents and the whole element lie.
    struct Element {
        let tag: UInt8
        let contents: Range<Int>
        let whole: Range<Int>
    }

    /// The element starting at `offset`, not reaching past `limit`.
    static func element(_ bytes: [UInt8], at offset: Int, limit: Int) -> Element? {
        guard offset + 2 <= limit, limit <= bytes.count else { return nil }
        let tag = bytes[offset]
        guard tag & 0x1F != 0x1F else { return nil }  // multi-byte tags: not in a certificate's frame
        var index = offset + 1
        let first = bytes[index]
        index += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard (1...4).contains(count), index + count <= limit else { return nil }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
            guard length >= 0x80 else { return nil }  // DER: the short form where it fits
        }
        guard length <= limit - index else { return nil }
        return Element(tag: tag, contents: index..<(index + length), whole: offset..<(index + length))
    }

    /// Where the SubjectPublicKeyInfo of the certificate `bytes` lies: `Certificate ::= SEQUENCE {
    /// tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber, signature, issuer, validity,
    /// subject, subjectPublicKeyInfo, … }, signatureAlgorithm, signatureValue }`. `nil` when the bytes
    /// are not one such certificate (trailing bytes included).
    static func subjectPublicKeyInfo(inCertificate bytes: [UInt8]) -> Range<Int>? {
        guard let certificate = element(bytes, at: 0, limit: bytes.count), certificate.tag == 0x30, certificate.whole.upperBound == bytes.count,
            let tbs = element(bytes, at: certificate.contents.lowerBound, limit: certificate.contents.upperBound), tbs.tag == 0x30
        else { return nil }
        var offset = tbs.contents.lowerBound
        guard var field = element(bytes, at: offset, limit: tbs.contents.upperBound) else { return nil }
        if field.tag == 0xA0 {  // [0] EXPLICIT version
            offset = field.whole.upperBound
            guard let next = element(bytes, at: offset, limit: tbs.contents.upperBound) else { return nil }
            field = next
        }
        // serialNumber INTEGER, signature SEQUENCE, issuer SEQUENCE, validity SEQUENCE, subject SEQUENCE.
        for expected: UInt8 in [0x02, 0x30, 0x30, 0x30, 0x30] {
            guard field.tag == expected else { return nil }
            offset = field.whole.upperBound
            guard let next = element(bytes, at: offset, limit: tbs.contents.upperBound) else { return nil }
            field = next
        }
        // subjectPublicKeyInfo ::= SEQUENCE { algorithm SEQUENCE, subjectPublicKey BIT STRING }
        guard field.tag == 0x30, let algorithm = element(bytes, at: field.contents.lowerBound, limit: field.contents.upperBound), algorithm.tag == 0x30,
            let key = element(bytes, at: algorithm.whole.upperBound, limit: field.contents.upperBound), key.tag == 0x03
        else { return nil }
        return field.whole
    }
}
