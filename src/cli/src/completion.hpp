#pragma once
// Shell completion scripts generated from the CLI11 app (--generate-completion bash|zsh|fish).
#include <CLI/CLI.hpp>

#include <string>

namespace s3d::cli::detail {

/// The completion script of `app` (its options and subcommands) for `shell` (bash, zsh or fish).
/// Options whose type name lists choices (`{a,b}` from CLI::IsMember, or `a|b|c[:N]`) complete those;
/// other valued options and positionals complete file names. @throws InvalidArgument for another shell.
std::string completion_script(const CLI::App& app, const std::string& shell);

}  // namespace s3d::cli::detail
