import Foundation
import Switchboard

/// YTKNetwork's batch and chain requests, and a dependency graph.
enum GroupScenarios {
    static let all: [DemoRunner.Scenario] = [
        DemoRunner.Scenario(title: "A batch: three images and the user info, typed, in one call (YTKBatchRequest)") { transcript in
            do {
                let (a, b, c, user) = try await Dispatcher.shared.batch(
                    GetImage(imageID: "1.jpg"), GetImage(imageID: "2.jpg"), GetImage(imageID: "3.jpg"), GetUserInfo(id: "123"))
                transcript.say("  images of \(a.data.count), \(b.data.count) and \(c.data.count) bytes; user \(user.json["user"]["name"].string ?? "-")")
                transcript.check(
                    !a.data.isEmpty && !b.data.isEmpty && !c.data.isEmpty && user.json["user"]["id"] == "123", "four responses, in order, each its own type: no casting")
            } catch {
                transcript.check(false, "the batch failed: \(error)")
            }
            let failing = BatchRequest([GetImage(imageID: "1.jpg"), BrokenEndpoint(), GetUserInfo(id: "9")])
            do throws(GroupError) {
                _ = try await failing.run()
                transcript.check(false, "a batch with a failing member should fail")
            } catch {
                transcript.say("  with a failing member: \(error)")
                transcript.check(error.failed?.index == 1, "fail-fast: the batch reports the member that failed")
            }
        },
        DemoRunner.Scenario(title: "A chain: register, then the new user's info built from the answer (YTKChainRequest)") { transcript in
            let chain = ChainRequest()
            chain.add(Register(username: "chain-demo", password: "secret")) { chain, response in
                let id = response.json["userId"].string ?? ""
                transcript.say("  registered \(id); now asking for its info")
                chain.add(GetUserInfo(id: id))
            }
            do {
                let responses = try await chain.run()
                let user = responses.last?.typed(GetUserInfo.self)?.json["user"]
                transcript.say("  user info: \(user?["name"].string ?? "-")")
                transcript.check(responses.count == 2 && user?["id"] == "u-chain-demo", "the second request was built from the first's response")
            } catch {
                transcript.check(false, "the chain failed: \(error)")
            }
        },
        DemoRunner.Scenario(title: "A diamond-shaped graph: user → (avatar, list) → summary, the middle in parallel") { transcript in
            let graph = RequestGraph()
            graph.add("user", GetUserInfo(id: "7"))
            graph.add("avatar", dependsOn: ["user"]) { done in GetImage(imageID: "\(done["user"]?.json["user"]["id"].string ?? "0").jpg") }
            graph.add("list", dependsOn: ["user"], CommonRequest(path: "/api.php", parameters: ["type": "List", "Start": "0", "End": "2"]))
            graph.add("summary", dependsOn: ["avatar", "list"]) { done in
                GetUserInfo(id: "\(done["avatar"]?.data.count ?? 0)-\(done["list"]?.json["list"].array?.count ?? 0)")
            }
            do {
                let results = try await graph.run()
                let summary = results.response("summary", as: GetUserInfo.self)?.request.id ?? "-"
                transcript.say("  summary built from both middles: id \(summary)")
                transcript.check(results.responses.count == 4 && summary.hasSuffix("-2"), "every node ran after its dependencies; the last was built from two of them")
            } catch {
                transcript.check(false, "the graph failed: \(error)")
            }
            let cyclic = RequestGraph()
            cyclic.add("a", dependsOn: ["b"], GetUserInfo(id: "1"))
            cyclic.add("b", dependsOn: ["a"], GetUserInfo(id: "2"))
            do throws(GroupError) {
                _ = try await cyclic.run()
                transcript.check(false, "a cycle should fail")
            } catch {
                let refused = if case .invalidRequest(let reason) = error.error { reason.contains("cycle") } else { false }
                transcript.check(refused, "a cycle is refused before anything is sent: \(error.error)")
            }
        },
    ]
}
