/* The control socket's shared lines (control_line.h). */
#include "control_line.h"

#include <stdlib.h>

shared_line *line_from_json(const json_t *value)
{
	size_t len = json_dumpb(value, NULL, 0, JSON_COMPACT);
	shared_line *line;
	if (len == 0)
		return NULL;
	line = malloc(sizeof *line + len + 1);
	if (line == NULL)
		return NULL;
	json_dumpb(value, line->data, len, JSON_COMPACT);
	line->data[len] = '\n';
	line->len = len + 1;
	line->refs = 1;
	return line;
}

void line_release(shared_line *line)
{
	if (--line->refs == 0)
		free(line);
}
