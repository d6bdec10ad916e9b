/* The stderr line of a log record (the format in ftl/agent.h), shared by the default sink and by embedders
 * that write records somewhere of their own: time, level, agent, component, the quoted message, then the
 * fields as key=value, a value quoted and escaped only when it must be for the line to split back on
 * spaces. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

const char *const ftl_log_level_strs[FTL_LOG_LEVEL_MAX] = {"debug", "info", "warn", "error"};

const char *ftl_log_level_name(ftl_log_level level)
{
	return (unsigned)level < FTL_LOG_LEVEL_MAX ? ftl_log_level_strs[level] : "?";
}

/* A bounded line: `need` counts every byte asked for, so the caller learns the full length. */
typedef struct line {
	char *buf;
	size_t cap, need;
} line;

static void put_char(line *b, char c)
{
	if (b->need + 1 < b->cap)
		b->buf[b->need] = c;
	b->need++;
}

static void put_str(line *b, const char *s)
{
	while (*s)
		put_char(b, *s++);
}

static void put_fmt(line *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_fmt(line *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	put_str(b, tmp);
}

static bool needs_quotes(const char *s)
{
	if (!*s)
		return true;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == '=' || *s == '"' || *s == '\\' || *s == 0x7f)
			return true;
	return false;
}

static void put_quoted(line *b, const char *s)
{
	put_char(b, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			put_char(b, '\\');
			put_char(b, (char)c);
		} else if (c == '\n') {
			put_str(b, "\\n");
		} else if (c == '\r') {
			put_str(b, "\\r");
		} else if (c == '\t') {
			put_str(b, "\\t");
		} else if (c < ' ' || c == 0x7f) {
			put_fmt(b, "\\x%02x", c);
		} else {
			put_char(b, (char)c);
		}
	}
	put_char(b, '"');
}

static void put_value(line *b, const char *s)
{
	if (needs_quotes(s))
		put_quoted(b, s);
	else
		put_str(b, s);
}

/* Up to three decimals, without the trailing zeros (12.5, 0.125, 3.0). */
static void put_double(line *b, double d)
{
	char tmp[64];
	int n = snprintf(tmp, sizeof(tmp), "%.3f", d);
	if (n > 0 && n < (int)sizeof(tmp) && strchr(tmp, '.')) {
		while (n > 2 && tmp[n - 1] == '0' && tmp[n - 2] != '.')
			tmp[--n] = '\0';
	}
	put_str(b, tmp);
}

static void put_field(line *b, const ftl_log_field *f)
{
	put_char(b, ' ');
	put_str(b, f->key ? f->key : "?");
	put_char(b, '=');
	switch (f->type) {
	case FTL_LOG_FIELD_STR:
		put_value(b, f->value.str ? f->value.str : "");
		break;
	case FTL_LOG_FIELD_INT:
		put_fmt(b, "%" PRId64, f->value.i);
		break;
	case FTL_LOG_FIELD_UINT:
		put_fmt(b, "%" PRIu64, f->value.u);
		break;
	case FTL_LOG_FIELD_HEX:
		put_fmt(b, "%016" PRIx64, f->value.u);
		break;
	case FTL_LOG_FIELD_DOUBLE:
		put_double(b, f->value.d);
		break;
	case FTL_LOG_FIELD_BOOL:
		put_str(b, f->value.b ? "true" : "false");
		break;
	default:
		put_str(b, "?");
	}
}

size_t ftl_log_format(const ftl_log_record *rec, char *buf, size_t len)
{
	line b = {.buf = buf, .cap = len};
	time_t secs = (time_t)(rec->time_us / 1000000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	put_fmt(&b, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		tm.tm_min, tm.tm_sec, (int)(rec->time_us % 1000000 / 1000));
	put_str(&b, " level=");
	put_str(&b, ftl_log_level_name(rec->level));
	put_str(&b, " agent=");
	put_value(&b, rec->agent ? rec->agent : "-");
	put_str(&b, " component=");
	put_value(&b, rec->component ? rec->component : "-");
	put_str(&b, " msg=");
	put_quoted(&b, rec->message ? rec->message : "");
	for (size_t i = 0; i < rec->n_fields; i++)
		put_field(&b, &rec->fields[i]);
	put_char(&b, '\n');
	if (len > 0) {
		size_t end = b.need < len ? b.need : len - 1;
		if (end > 0 && b.need >= len)
			buf[end - 1] = '\n'; /* a cut line still ends one */
		buf[end] = '\0';
	}
	return b.need;
}
