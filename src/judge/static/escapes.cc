// escapes.cc — what hides code from the scan or runs it outside the judged call:
// hidden_identifier (token pasting, universal character names), asm_escape and the other rules
// inline assembly can break (linker sections, clocks, L2 policies), linker_tricks (attributes and
// pragmas that run code at load time), symbol_interposition (a definition named like a library
// function).
#include <sstream>

#include "judge/static/source_scan.h"

namespace cuda_agent {
namespace {

// IsInterposingName: a function of this name would interpose on a CUDA, driver, profiler or libc
// function.
bool IsInterposingName(const std::string& n) {
  static const std::vector<std::string> kPrefixes = {"cuda", "cu",   "cublas", "cudnn", "cupti",
                                                     "nvtx", "nccl", "nvrtc",  "cufft", "curand"};
  for (const std::string& p : kPrefixes) {
    if (n.size() > p.size() && StartsWith(n, p) &&
        std::isupper(static_cast<unsigned char>(n[p.size()]))) {
      return true;
    }
  }
  if (StartsWith(n, "__cuda")) return true;
  static const auto* libc = new std::unordered_set<std::string>(WordSet(
      "dlopen dlsym dlclose clock clock_gettime gettimeofday time nanosleep usleep sleep "
      "pthread_create pthread_join malloc free calloc realloc mmap munmap mprotect open fopen read "
      "write getenv sched_yield"));
  return libc->count(n) > 0;
}
}  // namespace

void CheckHiddenIdentifiers(SourceScan& s) {
  for (const Token& t : s.src.tokens) {
    if (t.IsPunct("##") || t.IsPunct("%:%:")) {
      s.Emit(kHiddenIdentifier, t.line,
             "`" + t.text + "` builds identifiers the scan cannot see; write them out");
    }
  }
  for (size_t i = 0; i + 1 < s.src.code.size(); ++i) {
    if (s.src.code[i] == '\\' && (s.src.code[i + 1] == 'u' || s.src.code[i + 1] == 'U')) {
      s.Emit(kHiddenIdentifier, s.src.line_of[i],
             "a universal character name outside a literal hides an identifier; write it out");
    }
  }
}

void CheckAsm(SourceScan& s) {
  const std::vector<Token>& T = s.src.tokens;
  for (size_t i = 0; i < T.size(); ++i) {
    if (!(T[i].IsIdent("asm") || T[i].IsIdent("__asm__") || T[i].IsIdent("__asm"))) continue;
    size_t open = i + 1;
    while (open < T.size() && T[open].IsIdent()) ++open;  // volatile, goto, inline
    if (open >= T.size() || !T[open].IsPunct("(")) continue;
    size_t close = MatchClose(T, open);
    size_t end = close < T.size() ? T[close].offset : s.src.spliced.size();
    std::string_view body = s.src.OriginalRange(T[open].offset, end);
    int line = T[i].line;
    for (std::string_view bad :
         {".incbin", ".include", "syscall", "sysenter", "int $0x80", "int 0x80"}) {
      if (Contains(body, bad)) {
        s.Emit(kAsmEscape, line, "inline assembly uses `" + std::string(bad) + "`");
      }
    }
    for (std::string_view bad : {".section", ".pushsection", ".init_array"}) {
      if (Contains(body, bad)) {
        s.Emit(kLinkerTricks, line, "inline assembly uses `" + std::string(bad) + "`");
      }
    }
    for (std::string_view bad : {"globaltimer", "%clock", "rdtsc"}) {
      if (Contains(body, bad)) {
        s.Emit(kClockRead, line, "inline assembly reads a clock (`" + std::string(bad) + "`)");
      }
    }
    for (std::string_view bad : {"createpolicy", "evict_last"}) {
      if (Contains(body, bad)) {
        s.Emit(kL2Persistence, line,
               "inline PTX uses `" + std::string(bad) + "`, an L2 policy that survives the flush");
      }
    }
  }
}

void CheckAttributes(SourceScan& s) {
  static const auto* tricks = new std::unordered_set<std::string>(
      WordSet("constructor destructor section alias ifunc weak weakref"));
  const std::vector<Token>& T = s.src.tokens;
  for (size_t i = 0; i + 1 < T.size(); ++i) {
    if (!T[i].IsIdent("__attribute__") || !T[i + 1].IsPunct("(")) continue;
    size_t close = std::min(MatchClose(T, i + 1), i + kLookahead);
    for (size_t k = i + 2; k < close && k < T.size(); ++k) {
      std::string name = T[k].text;
      if (StartsWith(name, "__") && EndsWith(name, "__") && name.size() > 4) {
        name = name.substr(2, name.size() - 4);
      }
      if (T[k].IsIdent() && tricks->count(name)) {
        s.Emit(kLinkerTricks, T[k].line,
               "__attribute__((" + T[k].text + ")) changes what runs at load time");
      }
    }
  }
}

void CheckPragmas(SourceScan& s) {
  static const auto* tricks =
      new std::unordered_set<std::string>(WordSet("weak init fini section"));
  for (const std::vector<Token>& g : DirectiveGroups(s.src.tokens)) {
    if (g.size() >= 3 && g[1].IsIdent("pragma") && tricks->count(g[2].text)) {
      s.Emit(kLinkerTricks, g[2].line, "#pragma " + g[2].text + " changes what runs at load time");
    }
  }
  const std::vector<Token>& T = s.src.tokens;
  for (size_t i = 0; i + 2 < T.size(); ++i) {
    if (!T[i].IsIdent("_Pragma") || !T[i + 1].IsPunct("(") || T[i + 2].kind != TokenKind::kString) {
      continue;
    }
    std::string body(s.src.Original(T[i + 2]));
    std::istringstream words(body.substr(body.empty() ? 0 : 1));
    std::string first;
    words >> first;
    if (tricks->count(first)) {
      s.Emit(kLinkerTricks, T[i].line,
             "_Pragma(\"" + first + " ...\") changes what runs at load time");
    }
  }
}

std::unordered_set<std::string> DefinedFunctions(const std::vector<Token>& T) {
  std::unordered_set<std::string> names;
  for (size_t i = 1; i + 1 < T.size(); ++i) {
    if (!T[i].IsIdent() || !T[i + 1].IsPunct("(") || NotFunctionNames().count(T[i].text)) {
      continue;
    }
    const Token& before = T[i - 1];
    if (!(before.IsIdent() || before.IsPunct(">") || before.IsPunct("*") || before.IsPunct("&") ||
          before.IsPunct("::") || before.IsPunct("&&"))) {
      continue;
    }
    if (before.IsIdent() && NotFunctionNames().count(before.text)) continue;
    size_t k = MatchClose(T, i + 1);
    if (k >= T.size()) continue;
    ++k;
    while (k < T.size() && (T[k].IsIdent("const") || T[k].IsIdent("noexcept") ||
                            T[k].IsIdent("override") || T[k].IsIdent("final"))) {
      ++k;
    }
    if (k < T.size() && T[k].IsPunct("->")) {
      while (k < T.size() && !T[k].IsPunct("{") && !T[k].IsPunct(";")) ++k;
    }
    if (k < T.size() && T[k].IsPunct("{")) names.insert(T[i].text);
  }
  return names;
}

void CheckInterposition(SourceScan& s) {
  for (size_t i = 1; i + 1 < s.code.size(); ++i) {
    const Token& t = s.code[i];
    if (!t.IsIdent() || !s.defined.count(t.text) || !s.code[i + 1].IsPunct("(")) continue;
    if (s.code[i - 1].IsPunct("::") || s.code[i - 1].IsPunct(".") || s.code[i - 1].IsPunct("->")) {
      continue;
    }
    if (!IsInterposingName(t.text)) continue;
    // Only the definition itself, not its calls: the token before the name is a type.
    const Token& before = s.code[i - 1];
    if (before.IsIdent() || before.IsPunct("*") || before.IsPunct("&") || before.IsPunct(">")) {
      size_t close = MatchClose(s.code, i + 1);
      if (close + 1 < s.code.size() && !s.code[close + 1].IsPunct(";")) {
        s.Emit(kSymbolInterposition, t.line,
               "a function named `" + t.text +
                   "` can interpose on the library function of that "
                   "name; rename it");
      }
    }
  }
}

}  // namespace cuda_agent
