/*
 * api_errors.c - the REST API's error table, built from api_errors.def
 * (see api_errors.h).
 */
#include "daemon/api_errors.h"

static const struct api_error_row table[API_ERR_COUNT] = {
#define API_ERROR(name, status, code, meaning) [API_ERR_##name] = {status, #code, meaning},
#include "daemon/api_errors.def"
#undef API_ERROR
};

const struct api_error_row *api_errors_row(enum api_err e)
{
	return (unsigned)e < API_ERR_COUNT ? &table[e] : &table[API_ERR_INTERNAL];
}

unsigned api_errors_status(enum api_err e)
{
	return api_errors_row(e)->status;
}

const char *api_errors_code(enum api_err e)
{
	return api_errors_row(e)->code;
}

void api_errors_print(FILE *f)
{
	for (size_t i = 0; i < API_ERR_COUNT; i++)
		fprintf(f, "%u %s\n", table[i].status, table[i].code);
}
