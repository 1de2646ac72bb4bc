/*
 * The benchmark's baseline for the libcurl transport: a C program driving one libcurl multi handle on
 * one thread, keeping <concurrency> GETs of <url> in flight until <requests> have completed, each
 * with `Accept: application/json`, a User-Agent and libcurl's encodings (as the libcurl transport
 * sends them), a 30 s deadline, its body collected in memory and checked for `"ok":true`.
 * Easy handles are reused (libcurl's advice), connections kept alive, at most <concurrency> per host.
 *
 * It warms up first (one round of <concurrency> requests), then measures, and prints one line:
 *   <requests per second> <CPU microseconds per request> <context switches per request> <failures>
 * CPU and switches are this process's (getrusage) over the measured part only.
 *
 * Built by switchboard-bench at run time with the system C compiler (`cc -O2 ... -lcurl`): it needs
 * libcurl's development headers (Debian: libcurl4-openssl-dev). Not a target of Package.swift.
 *
 * Usage: curl_client <url> <requests> <concurrency>
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct slot {
    CURL *easy;
    char *body;
    size_t length;
    size_t capacity;
};

static size_t on_body(char *data, size_t size, size_t count, void *context) {
    struct slot *slot = context;
    size_t bytes = size * count;
    if (slot->length + bytes + 1 > slot->capacity) {
        size_t capacity = slot->capacity ? slot->capacity : 256;
        while (capacity < slot->length + bytes + 1) capacity *= 2;
        char *grown = realloc(slot->body, capacity);
        if (!grown) return 0;
        slot->body = grown;
        slot->capacity = capacity;
    }
    memcpy(slot->body + slot->length, data, bytes);
    slot->length += bytes;
    slot->body[slot->length] = 0;
    return bytes;
}

static double now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return time.tv_sec + time.tv_nsec / 1e9;
}

static void usage(double *cpu_us, double *switches) {
    struct rusage use;
    getrusage(RUSAGE_SELF, &use);
    *cpu_us = (use.ru_utime.tv_sec + use.ru_stime.tv_sec) * 1e6 + use.ru_utime.tv_usec + use.ru_stime.tv_usec;
    *switches = (double)use.ru_nvcsw + (double)use.ru_nivcsw;
}

/* Runs `total` requests with `concurrency` in flight; returns the number that failed. */
static long run(CURLM *multi, struct slot *slots, int concurrency, long total, const char *url, struct curl_slist *headers) {
    long started = 0, finished = 0, failed = 0;
    for (int i = 0; i < concurrency && started < total; i++, started++) {
        struct slot *slot = &slots[i];
        slot->length = 0;
        curl_easy_setopt(slot->easy, CURLOPT_URL, url);
        curl_easy_setopt(slot->easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(slot->easy, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(slot->easy, CURLOPT_WRITEDATA, slot);
        curl_easy_setopt(slot->easy, CURLOPT_PRIVATE, slot);
        /* As the libcurl transport asks: any encoding libcurl decodes, and a deadline per request. */
        curl_easy_setopt(slot->easy, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(slot->easy, CURLOPT_TIMEOUT, 30L);
        curl_multi_add_handle(multi, slot->easy);
    }
    while (finished < total) {
        int running = 0, left = 0;
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        while ((message = curl_multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            struct slot *slot = NULL;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&slot);
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            if (message->data.result != CURLE_OK || status != 200 || !slot->body || !strstr(slot->body, "\"ok\":true")) failed++;
            finished++;
            curl_multi_remove_handle(multi, easy);
            if (started < total) {
                started++;
                slot->length = 0;
                if (slot->body) slot->body[0] = 0;
                curl_multi_add_handle(multi, easy);
            }
        }
        if (finished < total) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    return failed;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <url> <requests> <concurrency>\n", argv[0]);
        return 2;
    }
    const char *url = argv[1];
    long requests = atol(argv[2]);
    int concurrency = atoi(argv[3]);
    if (requests <= 0 || concurrency <= 0) return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)concurrency);
    struct curl_slist *headers = curl_slist_append(NULL, "Accept: application/json");
    headers = curl_slist_append(headers, "User-Agent: curl_client/1 Switchboard-bench");
    struct slot *slots = calloc(concurrency, sizeof *slots);
    for (int i = 0; i < concurrency; i++) slots[i].easy = curl_easy_init();

    long warmFailures = run(multi, slots, concurrency, concurrency, url, headers);
    double cpu0, switches0, cpu1, switches1;
    usage(&cpu0, &switches0);
    double start = now();
    long failures = run(multi, slots, concurrency, requests, url, headers) + warmFailures;
    double seconds = now() - start;
    usage(&cpu1, &switches1);
    printf("%.1f %.2f %.3f %ld\n", requests / seconds, (cpu1 - cpu0) / requests, (switches1 - switches0) / requests, failures);

    for (int i = 0; i < concurrency; i++) {
        curl_easy_cleanup(slots[i].easy);
        free(slots[i].body);
    }
    free(slots);
    curl_slist_free_all(headers);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return failures == 0 ? 0 : 1;
}
