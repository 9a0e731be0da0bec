//! `sfstate-bench`: the end-to-end state benchmark (see `bench/README.md`).

use std::process::ExitCode;

use sfstate_bench::cli::{USAGE, parse, run_all};

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            eprintln!("{err}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run_all(&options) {
        Ok(reports) => {
            if options.json {
                match serde_json::to_string_pretty(&reports) {
                    Ok(json) => println!("{json}"),
                    Err(err) => {
                        eprintln!("sfstate-bench: {err}");
                        return ExitCode::FAILURE;
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("sfstate-bench: FAILED: {err}");
            ExitCode::FAILURE
        }
    }
}
