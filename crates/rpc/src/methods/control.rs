//! Control methods (Core's `rpc/server.cpp`): `help`, `stop`, `uptime`.
//!
//! `help` lists each method's one-line synopsis under its category, as
//! Core lays it out (`== Blockchain ==`, then `getblock "blockhash" (
//! verbosity )`: string arguments quoted, optional ones in parentheses);
//! `help <method>` adds a description, the arguments and the result in
//! Ibex's own words.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::invalidate::HIDDEN_CATEGORY;
use super::params::{integer, string, ArgSpec, ArgType};
use super::wait::WAIT_SLICE_MS;
use super::{arg, find, Method, MethodContext, METHODS};
use crate::json::escaped_string;
use crate::number::write_u64;

/// What `stop` answers (Core's `CLIENT_NAME " stopping"`).
pub(crate) const STOP_REPLY: &str = "Ibex stopping";

pub(super) const HELP: Method = Method {
    name: "help",
    category: "control",
    args: &[arg(
        "command",
        ArgType::String,
        true,
        "the method to describe (default: list them all)",
    )],
    description: "Lists every method, or describes one.",
    result: "\"text\" (string) the help text",
    handler: |_, params, out| {
        let command = params.optional(0).map(string).transpose()?.unwrap_or("");
        let text = if command.is_empty() {
            method_list()
        } else {
            match find(command) {
                Some(method) => full_help(method),
                None => format!("help: unknown command: {command}"),
            }
        };
        escaped_string(out, &text);
        Ok(())
    },
};

pub(super) const STOP: Method = Method {
    name: "stop",
    category: "control",
    args: &[ArgSpec {
        names: "wait",
        kind: ArgType::Number,
        optional: true,
        hidden: true,
        description: "milliseconds to wait before answering (for tests)",
    }],
    description: "Asks the node to shut down gracefully.",
    result: "\"Ibex stopping\" (string)",
    handler: |context, params, out| {
        context.backend.request_shutdown();
        if let Some(wait) = params.optional(0).filter(|value| value.is_number()) {
            let milliseconds = integer::<i32>(wait)?;
            sleep_unless_stopping(
                context,
                Duration::from_millis(milliseconds.max(0).unsigned_abs().into()),
            );
        }
        escaped_string(out, STOP_REPLY);
        Ok(())
    },
};

pub(super) const UPTIME: Method = Method {
    name: "uptime",
    category: "control",
    args: &[],
    description: "Seconds since the node started.",
    result: "n (numeric) seconds",
    handler: |context, _, out| {
        write_u64(out, context.started_at.elapsed().as_secs());
        Ok(())
    },
};

/// Sleeps `duration` in slices, ending early when the server stops (so a
/// long `stop` wait cannot hold a shutdown).
fn sleep_unless_stopping(context: &MethodContext, duration: Duration) {
    let deadline = Instant::now() + duration;
    while !context.is_stopping() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(WAIT_SLICE_MS)));
    }
}

/// Core's one-line synopsis: the name, then each argument shown (string
/// ones quoted), optional runs in `( ... )`.
pub(crate) fn synopsis(method: &Method) -> String {
    let mut line = method.name.to_owned();
    let mut in_optional = false;
    for arg in method.args.iter().take_while(|arg| !arg.hidden) {
        line.push(' ');
        if arg.optional && !in_optional {
            line.push_str("( ");
        } else if !arg.optional && in_optional {
            line.push_str(") ");
        }
        in_optional = arg.optional;
        match arg.kind {
            ArgType::String | ArgType::Hex => {
                let _ = write!(line, "\"{}\"", arg.name());
            }
            ArgType::NamedOptions(options) => {
                line.push('{');
                for (name, kind) in options {
                    let _ = write!(line, "\"{name}\":{kind},");
                }
                line.push_str("...}");
            }
            _ => line.push_str(arg.name()),
        }
    }
    if in_optional {
        line.push_str(" )");
    }
    line
}

/// Every method's synopsis under its category, categories apart by a
/// blank line (Core's `CRPCTable::help("")`, which leaves out the hidden
/// ones; `help <name>` still describes them).
fn method_list() -> String {
    let mut text = String::new();
    let mut category = "";
    let listed = METHODS.iter().filter(|method| method.category != HIDDEN_CATEGORY);
    for method in listed {
        if method.category != category {
            if !category.is_empty() {
                text.push('\n');
            }
            category = method.category;
            let mut letters = category.chars();
            let capitalised: String = letters
                .next()
                .map(|first| first.to_ascii_uppercase())
                .into_iter()
                .chain(letters)
                .collect();
            let _ = writeln!(text, "== {capitalised} ==");
        }
        text.push_str(&synopsis(method));
        text.push('\n');
    }
    text.pop();
    text
}

/// One method's help: synopsis, description, arguments, result.
pub(crate) fn full_help(method: &Method) -> String {
    let mut text = synopsis(method);
    let _ = write!(text, "\n\n{}\n", method.description);
    let shown: Vec<&ArgSpec> = method.args.iter().filter(|arg| !arg.hidden).collect();
    if !shown.is_empty() {
        text.push_str("\nArguments:\n");
        for (index, arg) in shown.iter().enumerate() {
            let kind = match arg.kind {
                ArgType::String => "string",
                ArgType::Hex => "string, hex",
                ArgType::Number => "numeric",
                ArgType::Bool => "boolean",
                ArgType::Array => "json array",
                ArgType::HashOrHeight => "string or numeric",
                ArgType::Any => "numeric or boolean",
                ArgType::NamedOptions(_) => "json object",
            };
            let need = if arg.optional { "optional" } else { "required" };
            let _ = writeln!(
                text,
                "{}. {} ({kind}, {need}) {}",
                index + 1,
                arg.name(),
                arg.description
            );
        }
    }
    let _ = write!(text, "\nResult:\n{}", method.result);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synopses_as_core_writes_them() {
        let line = |name| synopsis(find(name).unwrap());
        assert_eq!(line("getblock"), "getblock \"blockhash\" ( verbosity )");
        assert_eq!(line("gettxout"), "gettxout \"txid\" n ( include_mempool )");
        assert_eq!(line("waitfornewblock"), "waitfornewblock ( timeout \"current_tip\" )");
        assert_eq!(line("help"), "help ( \"command\" )");
        assert_eq!(line("stop"), "stop");
        let list = method_list();
        assert!(list.starts_with("== Blockchain ==\ndumphints \"path\" ( height \"format\" )\ndumptxoutset \"path\" ( \"type\" {\"rollback\":n,\"in_memory\":bool,...} )\ngetbestblockhash\ngetblock \"blockhash\""));
        assert!(list.contains(
            "\n\n== Control ==\nhelp ( \"command\" )\nstop\nuptime\n\n== Mining ==\nsubmitheader \"hexdata\"\n\n== Network ==\n"
        ));
        assert!(list.contains(
            "setban \"subnet\" \"command\" ( bantime absolute )\n\n== Rawtransactions =="
        ));
        assert!(list.ends_with("getrawtransaction \"txid\" ( verbosity \"blockhash\" )"));
        assert_eq!(line("getblockstats"), "getblockstats hash_or_height ( stats )",);
        assert!(list.contains("\ngetpeerinfo\n"));
        assert_eq!(line("addnode"), "addnode \"node\" \"command\" ( v2transport )");
        assert_eq!(line("disconnectnode"), "disconnectnode ( \"address\" nodeid )");
        assert!(
            list.contains("\nloadtxoutset \"path\"\npruneblockchain height\nwaitforblockheight ")
        );
        assert!(!list.contains("invalidateblock") && !list.contains("Hidden"));
        assert_eq!(line("invalidateblock"), "invalidateblock \"blockhash\"");
    }
}
