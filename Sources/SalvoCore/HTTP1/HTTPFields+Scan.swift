import SalvoTransport
import HTTPTypes

extension HTTPFields {
    /// The first value of `name`, found by a linear scan.
    ///
    /// `HTTPFields`' subscript builds a name index on first use and joins repeated fields:
    /// right for big heads read many times, too much for the one or two look-ups the engine
    /// makes per request on heads of a dozen fields.
    @inlinable
    package func firstValue(for name: HTTPField.Name) -> String? {
        for field in self where field.name == name {
            return field.value
        }
        return nil
    }

    /// Whether any field is named `name`, by a linear scan.
    @inlinable
    package func containsField(_ name: HTTPField.Name) -> Bool {
        self.contains { $0.name == name }
    }

    /// Every value of `name` joined with ", " (a list-valued field sent over several lines),
    /// by a linear scan; nil when there is none. Allocates only when the field repeats.
    @inlinable
    package func joinedValues(for name: HTTPField.Name) -> String? {
        var joined: String? = nil
        for field in self where field.name == name {
            if let previous = joined {
                joined = previous + ", " + field.value
            } else {
                joined = field.value
            }
        }
        return joined
    }
}
