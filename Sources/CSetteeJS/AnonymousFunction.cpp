// Sources that declare helpers or variables before their function, as CouchDB
// accepts them: its share/server/60/rewrite_fun.js parses the source as a
// program and turns the last function declaration, when it has no name, into
// an expression whose value the program ends with. A source that is one
// function expression never comes here (it compiles wrapped in parentheses).
#include "EngineContext.h"

#include <cstring>

namespace settee::engine {

// The byte offset of (1-based) `line` and `column` in UTF-8 `text`, columns
// counted in code points; the end of the text when past it.
static size_t offsetOf(const std::string &text, uint32_t line, uint32_t column) {
    size_t offset = 0;
    for (uint32_t current = 1; current < line && offset < text.size(); offset++) {
        if (text[offset] == '\n') current++;
    }
    for (uint32_t counted = 1; counted < column && offset < text.size(); counted++) {
        offset++;
        while (offset < text.size() && (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80) offset++;
    }
    return offset;
}

static bool isWordByte(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
           (static_cast<unsigned char>(c) & 0x80);
}

// The start of the keyword `function` nearest before `offset` (the engine
// reports a nameless declaration at or just after its keyword), or npos.
static size_t functionKeywordBefore(const std::string &text, size_t offset) {
    static const char keyword[] = "function";
    const size_t length = sizeof keyword - 1;
    size_t start = std::min(offset + length, text.size());
    while (start >= length) {
        size_t at = start - length;
        if (text.compare(at, length, keyword) == 0 && (at == 0 || !isWordByte(text[at - 1])) &&
            (at + length == text.size() || !isWordByte(text[at + length]))) {
            return at;
        }
        start--;
    }
    return std::string::npos;
}

AnonymousFunctionRewrite evaluateWithAnonymousFunction(JSContext *cx, const std::string &source, const char *file,
                                                       JS::MutableHandleValue factory) {
    if (!JS_IsExceptionPending(cx)) return AnonymousFunctionRewrite::notApplicable;
    JS::RootedValue original(cx);
    if (!JS_GetPendingException(cx, &original)) return AnonymousFunctionRewrite::notApplicable;
    JS_ClearPendingException(cx);
    auto restore = [&] {
        JS_SetPendingException(cx, original, JS::ExceptionStackBehavior::DoNotCapture);
        return AnonymousFunctionRewrite::notApplicable;
    };

    // Where, parsed as a program, the source has a function declaration without a name.
    JS::CompileOptions options(cx);
    options.setFileAndLine(file, 1);
    JS::SourceText<mozilla::Utf8Unit> text;
    if (!text.init(cx, source.data(), source.size(), JS::SourceOwnership::Borrowed)) return restore();
    JS::RootedScript script(cx, JS::Compile(cx, options, text));
    if (script || !JS_IsExceptionPending(cx)) return restore();
    JS::ExceptionStack exception(cx);
    if (!JS::StealPendingExceptionStack(cx, &exception)) return restore();
    JS::ErrorReportBuilder report(cx);
    if (!report.init(cx, exception, JS::ErrorReportBuilder::NoSideEffects) || !report.report() ||
        !report.toStringResult() || !strstr(report.toStringResult().c_str(), "function statement requires a name")) {
        JS_ClearPendingException(cx);
        return restore();
    }
    size_t keyword = functionKeywordBefore(source, offsetOf(source, report.report()->lineno, report.report()->column + 1));
    if (keyword == std::string::npos) return restore();

    // The body of a function that returns it.
    std::string program = "(function (require) {";
    program.append(source, 0, keyword);
    program.append("return ");
    program.append(source, keyword, std::string::npos);
    program.append("\n})");
    JS::SourceText<mozilla::Utf8Unit> rewritten;
    if (!rewritten.init(cx, program.data(), program.size(), JS::SourceOwnership::Borrowed) ||
        !JS::Evaluate(cx, options, rewritten, factory)) {
        // Broken elsewhere too: the error of the source as written is the one to show.
        JS_ClearPendingException(cx);
        return restore();
    }
    return AnonymousFunctionRewrite::evaluated;
}

}  // namespace settee::engine
