//! The five fields of a cron expression: their bounds and the names they accept.
//!
//! This is the knowledge every cron dialect shares; what a dialect does with it (which items it accepts, what it
//! says about the others) is up to its parser.

/// One of the five fields, in the order they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// 0 to 59.
    Minute,
    /// 0 to 23.
    Hour,
    /// 1 to 31.
    DayOfMonth,
    /// 1 to 12, or `jan` to `dec`.
    Month,
    /// 0 (Sunday) to 6, or `sun` to `sat`.
    DayOfWeek,
}

const MONTH_NAMES: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Sunday first: a day's position is its number.
const DAY_NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl Field {
    /// All five, in the order they are written.
    pub const ALL: [Self; 5] = [
        Self::Minute,
        Self::Hour,
        Self::DayOfMonth,
        Self::Month,
        Self::DayOfWeek,
    ];

    /// What the field is called in messages: "minute", "day of month", …
    pub const fn name(self) -> &'static str {
        match self {
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::DayOfMonth => "day of month",
            Self::Month => "month",
            Self::DayOfWeek => "day of week",
        }
    }

    /// The smallest value.
    pub const fn min(self) -> u32 {
        match self {
            Self::Minute | Self::Hour | Self::DayOfWeek => 0,
            Self::DayOfMonth | Self::Month => 1,
        }
    }

    /// The largest value; Sunday is `0`, so the day of the week ends at Saturday, `6`.
    pub const fn max(self) -> u32 {
        match self {
            Self::Minute => 59,
            Self::Hour => 23,
            Self::DayOfMonth => 31,
            Self::Month => 12,
            Self::DayOfWeek => 6,
        }
    }

    /// The lower-case three-letter names the field accepts, in value order from [`min`](Self::min); empty for the
    /// fields without names.
    pub const fn names(self) -> &'static [&'static str] {
        match self {
            Self::Month => &MONTH_NAMES,
            Self::DayOfWeek => &DAY_NAMES,
            Self::Minute | Self::Hour | Self::DayOfMonth => &[],
        }
    }

    /// The value a name stands for, ignoring ASCII case (`Jan` is 1, `sun` is 0).
    pub fn value_of_name(self, text: &str) -> Option<u32> {
        let position = self
            .names()
            .iter()
            .position(|name| name.eq_ignore_ascii_case(text))?;
        u32::try_from(position)
            .ok()
            .map(|position| position + self.min())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stand_for_their_values_from_the_minimum() {
        assert_eq!(Field::Month.value_of_name("jan"), Some(1));
        assert_eq!(Field::Month.value_of_name("DEC"), Some(12));
        assert_eq!(Field::DayOfWeek.value_of_name("Sun"), Some(0));
        assert_eq!(Field::DayOfWeek.value_of_name("sat"), Some(6));
        assert_eq!(Field::DayOfWeek.value_of_name("sunday"), None);
        assert_eq!(Field::Hour.value_of_name("mon"), None);
    }

    #[test]
    fn every_name_is_within_the_bounds() {
        for field in Field::ALL {
            let count = u32::try_from(field.names().len()).expect("a handful of names");
            assert!(
                count == 0 || field.min() + count - 1 == field.max(),
                "{field:?}"
            );
        }
    }
}
