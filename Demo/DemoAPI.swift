import Foundation
import Switchboard

/// `GET /users/:id` — the user info endpoint of the seeds.
struct GetUserInfo: Request {
    let id: String
    var path: String { "/users/\(id)" }
}

/// `POST /register` with form parameters.
struct Register: Request {
    let username: String
    let password: String
    var method: HTTPMethod { .post }
    var path: String { "/register" }
    var parameters: JSON? { ["username": .string(username), "password": .string(password)] }
}

/// `GET /images/:id` — raw JPEG bytes, not JSON.
struct GetImage: Request {
    let imageID: String
    var path: String { "/images/\(imageID)" }
    var responseFormat: ResponseFormat { .data }
}

/// An endpoint that answers 500 with a JSON body.
struct BrokenEndpoint: Request {
    var path: String { "/status/500" }
}
