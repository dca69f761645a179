//! `calculator`: arithmetic expressions (`+ - * / % ^`, parentheses, `sqrt`, `abs`,
//! `round`, `floor`, `ceil`, `ln`, `log`, `exp`, `sin`, `cos`, `tan`, `min`, `max`,
//! `pi`, `e`) by a small recursive-descent evaluator: numbers only, no code.

use serde_json::{Map, Value, json};

use super::{Handled, spec as builtin_spec, text_arg};
use toolgate_tool::{Permission, ToolContext, ToolError, ToolOutput, ToolSpec};

pub fn spec() -> ToolSpec {
    ToolSpec {
        credentials: Default::default(),
        is_final: false,
        hidden: false,
        sandbox: None,
        read_only: true,
        ..builtin_spec(
            "calculator",
            "Evaluate an arithmetic expression, e.g. 2+3*4, (1.5^2)/3, sqrt(2), max(3, 7) % 4.",
            Permission::Auto,
            json!({"type": "object", "properties": {"expression": {"type": "string", "maxLength": 1000, "description": "The expression."}}, "required": ["expression"], "additionalProperties": false}),
        )
    }
}

/// The handler of the tool.
pub fn calculator<'a>(_ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let expr = text_arg(&args, "expression");
        let value = evaluate(expr).map_err(ToolError::Execution)?;
        let number = if value.fract() == 0.0 && value.abs() < 9e15 {
            json!(value as i64)
        } else {
            json!(value)
        };
        Ok(ToolOutput::text(number.to_string()))
    })
}

/// Evaluates `expr`; the error says what is wrong and where.
pub fn evaluate(expr: &str) -> Result<f64, String> {
    let mut p = Parser {
        s: expr.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let v = p.expr()?;
    p.skip_ws();
    if p.pos < p.s.len() {
        return Err(p.error("unexpected"));
    }
    if !v.is_finite() {
        return Err("the result is not a finite number".into());
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn error(&self, what: &str) -> String {
        match self.s.get(self.pos) {
            Some(&c) => format!("{what} '{}' at position {}", c as char, self.pos + 1),
            None => format!("{what} end of expression"),
        }
    }

    fn expr(&mut self) -> Result<f64, String> {
        self.depth += 1;
        if self.depth > 64 {
            return Err("the expression nests too deep".into());
        }
        let mut v = self.term()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let r = self.term()?;
            v = if op == b'+' { v + r } else { v - r };
        }
        self.depth -= 1;
        Ok(v)
    }

    fn term(&mut self) -> Result<f64, String> {
        let mut v = self.unary()?;
        loop {
            match self.peek() {
                Some(b'*') if self.s.get(self.pos + 1) != Some(&b'*') => {
                    self.pos += 1;
                    v *= self.unary()?;
                }
                Some(op @ (b'/' | b'%')) => {
                    self.pos += 1;
                    let r = self.unary()?;
                    if r == 0.0 {
                        return Err("division by zero".into());
                    }
                    v = if op == b'/' { v / r } else { v % r };
                }
                _ => return Ok(v),
            }
        }
    }

    fn unary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                Ok(-self.unary()?)
            }
            Some(b'+') => {
                self.pos += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<f64, String> {
        let base = self.atom()?;
        let op = match self.peek() {
            Some(b'^') => 1,
            Some(b'*') if self.s.get(self.pos + 1) == Some(&b'*') => 2,
            _ => return Ok(base),
        };
        self.pos += op;
        let exp = self.unary()?;
        Ok(base.powf(exp))
    }

    fn atom(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                let v = self.expr()?;
                if self.peek() != Some(b')') {
                    return Err(self.error("expected ')' but found"));
                }
                self.pos += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
            Some(c) if c.is_ascii_alphabetic() => self.name(),
            _ => Err(self.error("expected a number but found")),
        }
    }

    fn number(&mut self) -> Result<f64, String> {
        let start = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_digit() || self.s[self.pos] == b'.')
        {
            self.pos += 1;
        }
        if self.pos < self.s.len() && matches!(self.s[self.pos], b'e' | b'E') {
            let save = self.pos;
            self.pos += 1;
            if self.pos < self.s.len() && matches!(self.s[self.pos], b'+' | b'-') {
                self.pos += 1;
            }
            let digits = self.pos;
            while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                self.pos += 1;
            }
            if self.pos == digits {
                self.pos = save;
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or_default();
        text.parse::<f64>()
            .map_err(|_| format!("'{text}' is not a number (at position {})", start + 1))
    }

    fn name(&mut self) -> Result<f64, String> {
        let start = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_alphanumeric() || self.s[self.pos] == b'_')
        {
            self.pos += 1;
        }
        let name = std::str::from_utf8(&self.s[start..self.pos])
            .unwrap_or_default()
            .to_ascii_lowercase();
        match name.as_str() {
            "pi" => return Ok(std::f64::consts::PI),
            "e" => return Ok(std::f64::consts::E),
            _ => {}
        }
        if self.peek() != Some(b'(') {
            return Err(format!("unknown name '{name}' (at position {})", start + 1));
        }
        self.pos += 1;
        let mut args = Vec::new();
        if self.peek() != Some(b')') {
            loop {
                args.push(self.expr()?);
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    Some(b')') => break,
                    _ => return Err(self.error("expected ',' or ')' but found")),
                }
            }
        }
        self.pos += 1;
        apply(&name, &args).map_err(|e| format!("{name}(): {e}"))
    }
}

fn apply(name: &str, args: &[f64]) -> Result<f64, String> {
    let one = |f: fn(f64) -> f64| match args {
        [x] => Ok(f(*x)),
        _ => Err(format!("takes 1 argument, got {}", args.len())),
    };
    match name {
        "sqrt" => match args {
            [x] if *x < 0.0 => Err("the square root of a negative number".into()),
            _ => one(f64::sqrt),
        },
        "abs" => one(f64::abs),
        "round" => one(f64::round),
        "floor" => one(f64::floor),
        "ceil" => one(f64::ceil),
        "exp" => one(f64::exp),
        "sin" => one(f64::sin),
        "cos" => one(f64::cos),
        "tan" => one(f64::tan),
        "ln" => match args {
            [x] if *x <= 0.0 => Err("the logarithm of a number that is not positive".into()),
            _ => one(f64::ln),
        },
        "log" => match args {
            [x] if *x > 0.0 => Ok(x.log10()),
            [x, base] if *x > 0.0 && *base > 0.0 && *base != 1.0 => Ok(x.log(*base)),
            _ => Err("takes a positive number (and a positive base other than 1)".into()),
        },
        "min" | "max" if !args.is_empty() => Ok(args
            .iter()
            .copied()
            .reduce(if name == "min" { f64::min } else { f64::max })
            .unwrap_or(0.0)),
        "min" | "max" => Err("takes at least one argument".into()),
        _ => Err("is not a known function".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::evaluate;

    #[test]
    fn arithmetic() {
        let cases = [
            ("2+3*4", 14.0),
            ("(2+3)*4", 20.0),
            ("2^3^2", 512.0),
            ("-2^2", -4.0),
            ("2**10", 1024.0),
            ("10 % 4", 2.0),
            ("sqrt(16) + abs(-2)", 6.0),
            ("max(1, 7, 3) - min(4, 2)", 5.0),
            ("1.5e2 / 3", 50.0),
            ("log(1000)", 3.0),
            ("log(8, 2)", 3.0),
            ("round(2.5) + floor(1.9) + ceil(0.1)", 5.0),
        ];
        for (expr, want) in cases {
            let got = evaluate(expr).unwrap_or(f64::NAN);
            assert!((got - want).abs() < 1e-9, "{expr} = {got}, want {want}");
        }
    }

    #[test]
    fn errors_are_clear() {
        for (expr, needle) in [
            ("1/0", "division by zero"),
            ("2+", "end of expression"),
            ("(1", "expected ')'"),
            ("foo(1)", "not a known function"),
            ("x + 1", "unknown name 'x'"),
            ("1 2", "unexpected '2' at position 3"),
            ("sqrt(-1)", "negative"),
            ("10^400", "not a finite number"),
            ("__import__('os')", "expected a number"),
        ] {
            let err = evaluate(expr).err().unwrap_or_default();
            assert!(err.contains(needle), "{expr}: {err}");
        }
        assert!(evaluate(&"(".repeat(500)).is_err());
    }
}
