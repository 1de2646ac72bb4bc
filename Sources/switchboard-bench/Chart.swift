import Foundation

/// The e2e scenario's figures as an SVG chart, drawn by hand: two panels, requests per second and CPU
/// µs per request, with a group of bars per concurrency level and a bar per client (the median; a
/// thin line from the minimum to the maximum over rounds).
enum Chart {
    /// One client's value at one concurrency level.
    struct Point {
        let client: String
        let concurrency: Int
        let value: Summary
    }

    /// The clients the chart shows, in the legend's order, with their colours.
    static let clients: [(name: String, colour: String)] = [
        ("URLSession", "#9e9e9e"),
        ("send + observer", "#90caf9"),
        ("response(for:)", "#1e88e5"),
        ("libcurl: send + observer", "#a5d6a7"),
        ("libcurl: response(for:)", "#2e7d32"),
        ("C libcurl client", "#ef6c00"),
    ]

    /// The points of `unit` in the e2e figures: each client's own row (measured against URLSession),
    /// and URLSession's from any of those rows' baselines.
    static func points(_ result: ScenarioResult, unit: String) -> [Point] {
        var points: [Point] = []
        var baselines: [Int: Summary] = [:]
        for figure in result.figures where figure.unit == unit && figure.baselineName == "URLSession" {
            guard let comma = figure.name.range(of: ", c=", options: .backwards), let concurrency = Int(figure.name[comma.upperBound...]) else { continue }
            points.append(Point(client: String(figure.name[..<comma.lowerBound]), concurrency: concurrency, value: figure.candidate))
            if let baseline = figure.baseline { baselines[concurrency] = baseline }
        }
        points += baselines.map { Point(client: "URLSession", concurrency: $0.key, value: $0.value) }
        return points.filter { point in clients.contains { $0.name == point.client } }
    }

    /// The SVG document for the e2e result.
    static func svg(_ result: ScenarioResult, title: String) -> String {
        let panels = [("requests per second (higher is better)", points(result, unit: "req/s")), ("CPU µs per request (lower is better)", points(result, unit: "CPU µs/req"))]
        let width = 980.0, height = 420.0, panelWidth = 440.0, top = 60.0, plotHeight = 280.0
        var body = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="20" y="24" font-size="15" font-weight="bold">\(escape(title))</text>

            """
        for (index, panel) in panels.enumerated() {
            let left = 60 + Double(index) * (panelWidth + 50)
            body += panelSVG(panel.1, caption: panel.0, left: left, top: top, width: panelWidth, height: plotHeight)
        }
        // The legend, under both panels.
        var x = 60.0
        for client in clients {
            body += "<rect x=\"\(x)\" y=\"\(height - 30)\" width=\"12\" height=\"12\" fill=\"\(client.colour)\"/>"
            body += "<text x=\"\(x + 16)\" y=\"\(height - 20)\">\(escape(client.name))</text>\n"
            x += 22 + Double(client.name.count) * 6.6
        }
        return body + "</svg>\n"
    }

    private static func panelSVG(_ points: [Point], caption: String, left: Double, top: Double, width: Double, height: Double) -> String {
        let levels = Array(Set(points.map(\.concurrency))).sorted()
        let largest = points.map(\.value.max).filter(\.isFinite).max() ?? 1
        let scale = niceCeiling(largest)
        var svg = "<text x=\"\(left)\" y=\"\(top - 12)\" font-weight=\"bold\">\(escape(caption))</text>\n"
        // Grid lines and their values.
        for step in 0...4 {
            let value = scale * Double(step) / 4
            let y = top + height - height * Double(step) / 4
            svg += "<line x1=\"\(left)\" y1=\"\(y)\" x2=\"\(left + width)\" y2=\"\(y)\" stroke=\"#e0e0e0\"/>"
            svg += "<text x=\"\(left - 6)\" y=\"\(y + 4)\" text-anchor=\"end\" fill=\"#616161\">\(format(value, 0))</text>\n"
        }
        guard !levels.isEmpty else { return svg }
        let groupWidth = width / Double(levels.count)
        let barWidth = min(22, (groupWidth - 16) / Double(clients.count))
        for (group, level) in levels.enumerated() {
            let groupLeft = left + Double(group) * groupWidth + (groupWidth - barWidth * Double(clients.count)) / 2
            for (slot, client) in clients.enumerated() {
                guard let point = points.first(where: { $0.client == client.name && $0.concurrency == level }), point.value.median.isFinite else { continue }
                let x = groupLeft + Double(slot) * barWidth
                let barHeight = height * point.value.median / scale
                svg += "<rect x=\"\(x)\" y=\"\(top + height - barHeight)\" width=\"\(barWidth - 2)\" height=\"\(barHeight)\" fill=\"\(client.colour)\">"
                svg += "<title>\(escape(client.name)), c=\(level): \(point.value.formatted())</title></rect>"
                // The range over rounds.
                let low = top + height - height * point.value.min / scale, high = top + height - height * point.value.max / scale
                let middle = x + (barWidth - 2) / 2
                svg += "<line x1=\"\(middle)\" y1=\"\(low)\" x2=\"\(middle)\" y2=\"\(high)\" stroke=\"#212121\" stroke-width=\"1\"/>\n"
            }
            svg += "<text x=\"\(left + (Double(group) + 0.5) * groupWidth)\" y=\"\(top + height + 18)\" text-anchor=\"middle\">c=\(level)</text>\n"
        }
        return svg
    }

    /// The smallest of 1, 1.2, 1.6, 2, 2.4, 3, 4, 6 or 8 times a power of ten that is at least `value`
    /// (each divides into four even steps on the axis).
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0, value.isFinite else { return 1 }
        let power = pow(10, floor(log10(value)))
        for factor in [1.0, 1.2, 1.6, 2, 2.4, 3, 4, 6, 8, 10] where factor * power >= value { return factor * power }
        return 10 * power
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
