//! Results as tern's programs print them: one JSON object with --json, or
//! "key value" lines.

pub struct Report {
    json: bool,
    first: bool,
}

impl Report {
    pub fn new(json: bool, program: &str) -> Report {
        let mut r = Report { json, first: true };
        if json {
            print!("{{");
            r.str("program", program);
        } else {
            println!("{program}");
        }
        r
    }

    fn key(&mut self, k: &str) {
        if self.json {
            print!("{}\"{k}\":", if self.first { "" } else { "," });
            self.first = false;
        } else {
            print!("  {k:<22} ");
        }
    }

    fn eol(&self) {
        if !self.json {
            println!();
        }
    }

    pub fn str(&mut self, k: &str, v: &str) {
        self.key(k);
        if self.json {
            print!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""));
        } else {
            print!("{v}");
        }
        self.eol();
    }

    pub fn u64(&mut self, k: &str, v: u64) {
        self.key(k);
        print!("{v}");
        self.eol();
    }

    pub fn f(&mut self, k: &str, v: f64, decimals: usize) {
        self.key(k);
        print!("{:.*}", decimals, if v.is_finite() { v } else { 0.0 });
        self.eol();
    }

    pub fn bool(&mut self, k: &str, v: bool) {
        self.key(k);
        print!("{v}");
        self.eol();
    }

    pub fn end(self) {
        if self.json {
            println!("}}");
        }
    }
}

/// Nearest-rank percentile of sorted values.
fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// requests, duration_s, rps, p50_us, p99_us, p999_us, mean_us, max_us.
pub fn latencies(r: &mut Report, mut ns: Vec<u64>, duration_s: f64) {
    ns.sort_unstable();
    let n = ns.len() as u64;
    let us = |v: u64| v as f64 / 1000.0;
    let mean = if n > 0 { ns.iter().sum::<u64>() as f64 / n as f64 / 1000.0 } else { 0.0 };
    r.u64("requests", n);
    r.f("duration_s", duration_s, 3);
    r.f("rps", n as f64 / duration_s, 0);
    r.f("p50_us", us(pct(&ns, 0.50)), 2);
    r.f("p99_us", us(pct(&ns, 0.99)), 2);
    r.f("p999_us", us(pct(&ns, 0.999)), 2);
    r.f("mean_us", mean, 2);
    r.f("max_us", us(*ns.last().unwrap_or(&0)), 2);
}
