//! serde's `rename_all` rules, applied to field names exactly as serde_derive applies them, so
//! the dtype's field names equal the keys serde serializes.

/// A `#[serde(rename_all = "...")]` convention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // serde's names for the conventions
pub(crate) enum RenameRule {
    LowerCase,
    UpperCase,
    PascalCase,
    CamelCase,
    SnakeCase,
    ScreamingSnakeCase,
    KebabCase,
    ScreamingKebabCase,
}

const RULES: &[(&str, RenameRule)] = &[
    ("lowercase", RenameRule::LowerCase),
    ("UPPERCASE", RenameRule::UpperCase),
    ("PascalCase", RenameRule::PascalCase),
    ("camelCase", RenameRule::CamelCase),
    ("snake_case", RenameRule::SnakeCase),
    ("SCREAMING_SNAKE_CASE", RenameRule::ScreamingSnakeCase),
    ("kebab-case", RenameRule::KebabCase),
    ("SCREAMING-KEBAB-CASE", RenameRule::ScreamingKebabCase),
];

impl RenameRule {
    /// The rule serde accepts under this name.
    pub(crate) fn from_name(name: &str) -> Option<RenameRule> {
        RULES.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
    }

    /// The name of a struct field (a Rust snake_case identifier) under this rule.
    pub(crate) fn apply_to_field(self, field: &str) -> String {
        use RenameRule::*;
        match self {
            LowerCase | SnakeCase => field.to_owned(),
            UpperCase | ScreamingSnakeCase => field.to_ascii_uppercase(),
            PascalCase => {
                let mut pascal = String::with_capacity(field.len());
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        pascal.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        pascal.push(ch);
                    }
                }
                pascal
            }
            CamelCase => {
                let pascal = PascalCase.apply_to_field(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(c) => c.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => pascal,
                }
            }
            KebabCase => field.replace('_', "-"),
            ScreamingKebabCase => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RenameRule::{self, *};

    #[test]
    fn field_rules_match_serde() {
        // serde_derive's own `rename_fields` table.
        for &(original, upper, pascal, camel, screaming, kebab, screaming_kebab) in &[
            (
                "outcome", "OUTCOME", "Outcome", "outcome", "OUTCOME", "outcome", "OUTCOME",
            ),
            (
                "very_tasty",
                "VERY_TASTY",
                "VeryTasty",
                "veryTasty",
                "VERY_TASTY",
                "very-tasty",
                "VERY-TASTY",
            ),
            ("a", "A", "A", "a", "A", "a", "A"),
            ("z42", "Z42", "Z42", "z42", "Z42", "z42", "Z42"),
        ] {
            assert_eq!(LowerCase.apply_to_field(original), original);
            assert_eq!(UpperCase.apply_to_field(original), upper);
            assert_eq!(PascalCase.apply_to_field(original), pascal);
            assert_eq!(CamelCase.apply_to_field(original), camel);
            assert_eq!(SnakeCase.apply_to_field(original), original);
            assert_eq!(ScreamingSnakeCase.apply_to_field(original), screaming);
            assert_eq!(KebabCase.apply_to_field(original), kebab);
            assert_eq!(ScreamingKebabCase.apply_to_field(original), screaming_kebab);
        }
    }

    #[test]
    fn names_and_edge_cases() {
        assert_eq!(
            RenameRule::from_name("SCREAMING-KEBAB-CASE"),
            Some(ScreamingKebabCase)
        );
        assert_eq!(RenameRule::from_name("Title Case"), None);
        assert_eq!(CamelCase.apply_to_field("_"), "");
        assert_eq!(CamelCase.apply_to_field("_leading_x"), "leadingX");
        assert_eq!(PascalCase.apply_to_field("été_x"), "étéX");
    }
}
