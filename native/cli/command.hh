// Subcommand registry of the `gpumpi` CLI. Each subcommand lives in its own cli/<name>Cmd.cc and registers
// itself with a file-scope `static const gpumpi::cli::Registration reg{"name", "one-line help", fn};`
// (cli sources are compiled straight into the executable, so static registration is never dropped by the linker).
// fn receives argv after the subcommand name and returns the process exit code. It may call MPI_Init itself.
#pragma once
#include <string>
#include <vector>

namespace gpumpi::cli {

using CommandFn = int (*)(const std::vector<std::string>& args);

struct Command {
	const char* name;
	const char* help;
	CommandFn fn;
};

std::vector<Command>& commands();

struct Registration {
	Registration(const char* name, const char* help, CommandFn fn) { commands().push_back({name, help, fn}); }
};

}  // namespace gpumpi::cli
