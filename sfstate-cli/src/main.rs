//! `sfstate`: inspect, dump and verify canonical snapshot directories (see the library docs).

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use keygroup::{MaxParallelism, Parallelism};
use sfstate_cli::{CliError, Result, VerifyOptions};

const USAGE: &str = "\
sfstate inspect DIR [--json]
sfstate dump DIR --key-group N --section NAME -o FILE
sfstate verify DIR --operator-id ID --max-parallelism M --parallelism P [--rescale-from P1]";

/// The arguments after the command: one positional `DIR` and `--flag value` pairs.
struct Args {
    dir: Option<PathBuf>,
    flags: Vec<(String, Option<String>)>,
}

impl Args {
    fn parse(rest: impl Iterator<Item = String>, switches: &[&str]) -> Result<Self> {
        let mut args = Args {
            dir: None,
            flags: Vec::new(),
        };
        let mut rest = rest.peekable();
        while let Some(arg) = rest.next() {
            if switches.contains(&arg.as_str()) {
                args.flags.push((arg, None));
            } else if arg.starts_with('-') {
                let value = rest
                    .next()
                    .ok_or_else(|| CliError::Usage(format!("{arg} needs a value\n{USAGE}")))?;
                args.flags.push((arg, Some(value)));
            } else if args.dir.is_none() {
                args.dir = Some(PathBuf::from(arg));
            } else {
                return Err(CliError::Usage(format!(
                    "unexpected argument {arg:?}\n{USAGE}"
                )));
            }
        }
        Ok(args)
    }

    fn dir(&self) -> Result<&PathBuf> {
        self.dir
            .as_ref()
            .ok_or_else(|| CliError::Usage(format!("DIR is missing\n{USAGE}")))
    }

    fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, _)| n == name)
    }

    fn value(&self, names: &[&str]) -> Option<&str> {
        self.flags
            .iter()
            .find(|(n, _)| names.contains(&n.as_str()))
            .and_then(|(_, v)| v.as_deref())
    }

    fn required(&self, names: &[&str]) -> Result<&str> {
        self.value(names)
            .ok_or_else(|| CliError::Usage(format!("{} is required\n{USAGE}", names[0])))
    }

    fn number(&self, names: &[&str]) -> Result<i32> {
        let v = self.required(names)?;
        v.parse()
            .map_err(|_| CliError::Usage(format!("{}: {v:?} is not a number", names[0])))
    }
}

fn run() -> Result<String> {
    let mut command_line = std::env::args().skip(1);
    let command = command_line.next().unwrap_or_default();
    match command.as_str() {
        "inspect" => {
            let args = Args::parse(command_line, &["--json"])?;
            sfstate_cli::inspect(args.dir()?, args.has("--json"))
        }
        "dump" => {
            let args = Args::parse(command_line, &[])?;
            let key_group = u32::try_from(args.number(&["--key-group"])?)
                .map_err(|_| CliError::Usage("--key-group must be >= 0".to_owned()))?;
            let section = args.required(&["--section"])?;
            let out = PathBuf::from(args.required(&["-o", "--output"])?);
            let rows = sfstate_cli::dump(args.dir()?, key_group, section, &out)?;
            Ok(format!(
                "wrote {rows} rows of key group {key_group}, section {section:?} to {}\n",
                out.display()
            ))
        }
        "verify" => {
            let args = Args::parse(command_line, &[])?;
            let usage = |e: keygroup::Error| CliError::Usage(e.to_string());
            let mp = MaxParallelism::new(args.number(&["--max-parallelism"])?).map_err(usage)?;
            let p = Parallelism::new(args.number(&["--parallelism"])?).map_err(usage)?;
            let mut options = VerifyOptions::new(args.required(&["--operator-id"])?, mp, p);
            if args.value(&["--rescale-from"]).is_some() {
                let from = Parallelism::new(args.number(&["--rescale-from"])?).map_err(usage)?;
                options = options.with_rescale_from(from);
            }
            sfstate_cli::verify(args.dir()?, &options)
        }
        "" | "-h" | "--help" | "help" => Ok(format!("{USAGE}\n")),
        other => Err(CliError::Usage(format!(
            "unknown command {other:?}\n{USAGE}"
        ))),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(1))
        }
    }
}
