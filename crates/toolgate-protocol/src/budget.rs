//! Spend limits: what a budget counts (tokens or money), over what (a run, a
//! conversation, a calendar day or month), and what reaching it does (pause for an
//! approver, fail the run, or only warn). An agent file's `budget:`, a key's
//! `--budget` and a tenant's entry in the `--tenants` file each carry a list of them.
//!
//! ```
//! use toolgate_protocol::budget::{Budget, Limit, OnLimit, Per};
//! let b = Budget::parse_short("0.50usd/day:fail").unwrap();
//! assert_eq!(b, Budget { limit: Limit::Usd(500_000_000), per: Per::Day, on_limit: OnLimit::Fail });
//! assert_eq!(b.to_string(), "0.5usd/day:fail");
//! assert_eq!(Budget::parse_short("20000tokens/run").unwrap().on_limit, OnLimit::Pause);
//! ```

use serde::{Deserialize, Serialize};

/// Nanodollars in one US dollar: money is counted in whole nanodollars, so that sums are
/// exact.
pub const NANOS_PER_USD: u64 = 1_000_000_000;

/// What a budget's spend is summed over.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Per {
    /// One run (its own model requests).
    Run,
    /// Every run of the run's conversation.
    Conversation,
    /// The calendar day (UTC) so far.
    Day,
    /// The calendar month (UTC) so far.
    Month,
}

impl Per {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Where the period holding `now_ms` began (Unix milliseconds, UTC); `None` for a run
    /// or a conversation, which have no period.
    pub fn period_start(self, now_ms: i64) -> Option<i64> {
        const DAY: i64 = 86_400_000;
        let day = now_ms.div_euclid(DAY);
        match self {
            Per::Run | Per::Conversation => None,
            Per::Day => Some(day * DAY),
            Per::Month => {
                let (y, m, _) = civil_from_days(day);
                Some(days_from_civil(y, m, 1) * DAY)
            }
        }
    }
}

/// What reaching a budget does.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum OnLimit {
    /// The run pauses with an item of kind `budget`; an approver may raise the limit for
    /// this run and continue it, or deny (the run fails).
    #[default]
    Pause,
    /// The run fails.
    Fail,
    /// The run goes on; a `budget.reached` event and a warning in the log say so.
    Warn,
}

impl OnLimit {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// How much may be spent: tokens (prompt and completion together) or money.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    Tokens(u64),
    /// Nanodollars (see [`NANOS_PER_USD`]).
    Usd(u64),
}

impl Limit {
    /// The unit's name: `tokens` or `usd`.
    pub fn unit(self) -> &'static str {
        match self {
            Limit::Tokens(_) => "tokens",
            Limit::Usd(_) => "usd",
        }
    }

    /// The amount, in tokens or nanodollars.
    pub fn amount(self) -> u64 {
        match self {
            Limit::Tokens(n) | Limit::Usd(n) => n,
        }
    }

    /// The same unit with another amount.
    pub fn with_amount(self, amount: u64) -> Limit {
        match self {
            Limit::Tokens(_) => Limit::Tokens(amount),
            Limit::Usd(_) => Limit::Usd(amount),
        }
    }

    /// The amount as people write it: tokens, or dollars with their decimals.
    pub fn shown(self) -> String {
        match self {
            Limit::Tokens(n) => n.to_string(),
            Limit::Usd(n) => usd(n),
        }
    }
}

/// Nanodollars written as dollars (`0.5`, `12`, `0.000123`).
pub fn usd(nanos: u64) -> String {
    let whole = nanos / NANOS_PER_USD;
    let frac = nanos % NANOS_PER_USD;
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:09}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Dollars (`0.5`, `12`) as nanodollars; `None` for a negative, non-finite or too large
/// amount.
pub fn nanos_of_usd(dollars: f64) -> Option<u64> {
    let n = (dollars * NANOS_PER_USD as f64).round();
    (dollars.is_finite() && dollars >= 0.0 && n < u64::MAX as f64).then_some(n as u64)
}

/// One spend limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Budget {
    pub limit: Limit,
    pub per: Per,
    pub on_limit: OnLimit,
}

/// A budget as a file writes it: `{per, tokens | usd, on_limit}`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Budget")]
pub struct BudgetFile {
    /// What the spend is summed over: `run`, `conversation`, `day` or `month` (UTC).
    pub per: Per,
    /// The most tokens (prompt and completion) that may be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// The most US dollars that may be spent, by the price table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
    /// `pause` (the default), `fail` or `warn`.
    #[serde(default)]
    pub on_limit: OnLimit,
}

/// A budget that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BudgetError(pub String);

impl TryFrom<BudgetFile> for Budget {
    type Error = BudgetError;

    fn try_from(f: BudgetFile) -> Result<Budget, BudgetError> {
        let limit = match (f.tokens, f.usd) {
            (Some(t), None) => Limit::Tokens(t),
            (None, Some(d)) => Limit::Usd(
                nanos_of_usd(d)
                    .ok_or_else(|| BudgetError(format!("usd: {d} is not an amount of dollars")))?,
            ),
            _ => {
                return Err(BudgetError(
                    "a budget gives either 'tokens' or 'usd' (not both)".into(),
                ));
            }
        };
        Ok(Budget {
            limit,
            per: f.per,
            on_limit: f.on_limit,
        })
    }
}

impl From<Budget> for BudgetFile {
    fn from(b: Budget) -> BudgetFile {
        let (tokens, usd) = match b.limit {
            Limit::Tokens(t) => (Some(t), None),
            Limit::Usd(n) => (None, Some(n as f64 / NANOS_PER_USD as f64)),
        };
        BudgetFile {
            per: b.per,
            tokens,
            usd,
            on_limit: b.on_limit,
        }
    }
}

impl Serialize for Budget {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        BudgetFile::from(*self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Budget {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Budget, D::Error> {
        let file = BudgetFile::deserialize(d)?;
        Budget::try_from(file).map_err(serde::de::Error::custom)
    }
}

impl Budget {
    /// Reads the short form of a command line: `AMOUNT UNIT / PER [: ON_LIMIT]`, e.g.
    /// `20000tokens/run`, `5usd/month:fail`, `0.10usd/conversation:warn`.
    pub fn parse_short(text: &str) -> Result<Budget, BudgetError> {
        let bad = |why: &str| {
            BudgetError(format!(
                "'{text}' is not a budget ({why}); write AMOUNT(tokens|usd)/PER[:pause|fail|warn], e.g. 5usd/month:fail"
            ))
        };
        let (amount, rest) = text.trim().split_once('/').ok_or_else(|| bad("no '/'"))?;
        let (per, on_limit) = match rest.split_once(':') {
            Some((p, o)) => (p, Some(o)),
            None => (rest, None),
        };
        let per: Per = per
            .trim()
            .parse()
            .map_err(|_| bad("PER is run, conversation, day or month"))?;
        let on_limit: OnLimit = match on_limit {
            Some(o) => o
                .trim()
                .parse()
                .map_err(|_| bad("on the limit: pause, fail or warn"))?,
            None => OnLimit::Pause,
        };
        let amount = amount.trim();
        let limit = if let Some(n) = amount.strip_suffix("tokens") {
            Limit::Tokens(
                n.trim()
                    .parse()
                    .map_err(|_| bad("tokens are a whole number"))?,
            )
        } else if let Some(n) = amount.strip_suffix("usd") {
            let d: f64 = n.trim().parse().map_err(|_| bad("usd is a number"))?;
            Limit::Usd(nanos_of_usd(d).ok_or_else(|| bad("usd is not negative"))?)
        } else {
            return Err(bad("the amount ends in 'tokens' or 'usd'"));
        };
        Ok(Budget {
            limit,
            per,
            on_limit,
        })
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}{}/{}:{}",
            self.limit.shown(),
            self.limit.unit(),
            self.per.as_str(),
            self.on_limit.as_str()
        )
    }
}

/// Whose budget it is: where the rule was written, which also says whose spend a
/// period's budget counts (the agent's, the key's, the tenant's runs).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "of", content = "name", rename_all = "snake_case")]
pub enum Whose {
    /// The agent file's `budget:` (the agent's runs in the run's tenant).
    Agent(String),
    /// An issued key's `--budget` (the runs started with that key).
    Key(String),
    /// The tenant's entry in the `--tenants` file (every run of the tenant).
    Tenant(String),
}

impl std::fmt::Display for Whose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Whose::Agent(n) => write!(f, "agent {n}"),
            Whose::Key(n) => write!(f, "key {n}"),
            Whose::Tenant(n) => write!(f, "tenant {n}"),
        }
    }
}

/// A budget with whose it is, as a run carries it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OwnedBudget {
    pub whose: Whose,
    pub budget: Budget,
}

impl OwnedBudget {
    /// A name for this rule that stays the same across saves (a raised limit is kept
    /// under it): `agent:NAME/run/tokens`.
    pub fn key(&self) -> String {
        let (of, name) = match &self.whose {
            Whose::Agent(n) => ("agent", n),
            Whose::Key(n) => ("key", n),
            Whose::Tenant(n) => ("tenant", n),
        };
        format!(
            "{of}:{name}/{}/{}",
            self.budget.per.as_str(),
            self.budget.limit.unit()
        )
    }
}

/// Days since 1970-01-01 as (year, month, day) (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// (year, month, day) as days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_start_at_utc_midnight_and_the_first_of_the_month() {
        // 2026-11-28T13:40:08Z
        let now = 1_795_873_208_000;
        assert_eq!(Per::Day.period_start(now), Some(1_795_824_000_000));
        // 2026-11-01T00:00:00Z
        assert_eq!(Per::Month.period_start(now), Some(1_793_491_200_000));
        assert_eq!(Per::Run.period_start(now), None);
        // 2024-03-01 after a leap February.
        assert_eq!(
            Per::Month.period_start(1_709_294_400_000),
            Some(1_709_251_200_000)
        );
    }

    #[test]
    fn the_short_form_reads_back_what_it_writes() {
        for text in [
            "20000tokens/run:pause",
            "5usd/month:fail",
            "0.001usd/day:warn",
        ] {
            let b = Budget::parse_short(text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(b.to_string(), text);
        }
        for bad in [
            "5/run",
            "5usd",
            "5usd/week",
            "5usd/run:stop",
            "-1usd/run",
            "xtokens/run",
        ] {
            assert!(Budget::parse_short(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_file_names_one_unit() {
        let both: Result<Budget, _> =
            serde_json::from_str(r#"{"per": "run", "tokens": 5, "usd": 1}"#);
        assert!(both.is_err());
        let b: Budget = serde_json::from_str(r#"{"per": "day", "usd": 0.25}"#)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.limit, Limit::Usd(250_000_000));
        assert_eq!(b.on_limit, OnLimit::Pause);
        assert_eq!(usd(1_500_000_000), "1.5");
        assert_eq!(usd(123), "0.000000123");
    }
}
