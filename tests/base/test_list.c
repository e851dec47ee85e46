/* SPDX-License-Identifier: MIT */
/*
 * test_list.c: base/list.h, the intrusive list every module's queues and
 * caches use: order kept at both ends, removal from any place (twice is
 * harmless), and walks that survive removing the element they stand on.
 */
#include "base/list.h"
#include "test.h"

struct item {
    int value;
    struct list link;
};

/* The values, first to last, as a string such as "1 2 3". */
static const char *order(const struct list *l, char *buf, size_t cap)
{
    struct item *it;
    size_t n = 0;
    buf[0] = 0;
    list_for_each(it, tmp, l, struct item, link)
        n += (size_t)snprintf(buf + n, cap - n, n ? " %d" : "%d", it->value);
    return buf;
}

TEST(ends_and_order)
{
    struct list l;
    struct item a = {.value = 1}, b = {.value = 2}, c = {.value = 3};
    char buf[64];
    list_init(&l);
    CHECK(list_empty(&l));
    CHECK(list_first(&l) == NULL && list_last(&l) == NULL);
    list_add_tail(&l, &b.link);
    list_add_head(&l, &a.link);
    list_add_tail(&l, &c.link);
    CHECK(!strcmp(order(&l, buf, sizeof buf), "1 2 3"));
    CHECK(list_entry(list_first(&l), struct item, link) == &a);
    CHECK(list_entry(list_last(&l), struct item, link) == &c);
    struct item *it;
    int back = 0;
    list_for_each_rev(it, tmp, &l, struct item, link)
        back = back * 10 + it->value;
    CHECK_EQ(back, 321);
}

TEST(removal_anywhere_and_twice)
{
    struct list l;
    struct item v[4] = {{.value = 1}, {.value = 2}, {.value = 3}, {.value = 4}};
    char buf[64];
    list_init(&l);
    for (int i = 0; i < 4; i++)
        list_add_tail(&l, &v[i].link);
    list_remove(&v[1].link);
    CHECK(!list_linked(&v[1].link));
    list_remove(&v[1].link);   /* not linked: nothing happens */
    CHECK(!strcmp(order(&l, buf, sizeof buf), "1 3 4"));
    list_remove(&v[0].link);
    list_remove(&v[3].link);
    CHECK(!strcmp(order(&l, buf, sizeof buf), "3"));
    list_remove(&v[2].link);
    CHECK(list_empty(&l));
}

TEST(walks_survive_removing_the_current_element)
{
    struct list l;
    struct item v[6];
    char buf[64];
    list_init(&l);
    for (int i = 0; i < 6; i++) {
        v[i].value = i;
        list_add_tail(&l, &v[i].link);
    }
    struct item *it;
    list_for_each(it, tmp, &l, struct item, link)
        if (it->value % 2)
            list_remove(&it->link);
    CHECK(!strcmp(order(&l, buf, sizeof buf), "0 2 4"));
    list_for_each_rev(it, tmp, &l, struct item, link)
        list_remove(&it->link);
    CHECK(list_empty(&l));
}

int main(void)
{
    RUN(ends_and_order);
    RUN(removal_anywhere_and_twice);
    RUN(walks_survive_removing_the_current_element);
    return TEST_SUMMARY();
}
