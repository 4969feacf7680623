import Foundation

/// A `DecodingError` in words a user can act on ("missing field 'title'", "wrong type at items[2].done: expected a
/// boolean"), instead of its debug description.
package enum DecodingErrorText {
    /// The error as a short phrase naming the field concerned.
    package static func describe(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not valid JSON" : "invalid value at \(path(context.codingPath))"
        case .keyNotFound(let key, let context):
            let parent = context.codingPath.isEmpty ? "" : " in \(path(context.codingPath))"
            return "missing field '\(key.stringValue)'\(parent)"
        case .typeMismatch(let type, let context):
            return "wrong type at \(path(context.codingPath)): expected \(kind(of: type))"
        case .valueNotFound(let type, let context):
            return "missing value at \(path(context.codingPath)): expected \(kind(of: type))"
        @unknown default:
            return "\(error)"
        }
    }

    /// `items[2].title`, or "the top level".
    package static func path(_ codingPath: [any CodingKey]) -> String {
        guard !codingPath.isEmpty else { return "the top level" }
        var text = ""
        for key in codingPath {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }

    /// "a string", "a number", ... for the types commands and files are made of.
    private static func kind(of type: Any.Type) -> String {
        switch type {
        case is String.Type, is Substring.Type: return "a string"
        case is Bool.Type: return "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type, is UInt32.Type:
            return "an integer"
        case is Double.Type, is Float.Type: return "a number"
        case is Data.Type: return "data (base64 text)"
        default:
            let name = String(describing: type)
            if name.hasPrefix("Array<") || name.hasPrefix("[") { return "a list" }
            if name.hasPrefix("Dictionary<") { return "an object" }
            return "a value of type \(name)"
        }
    }
}
