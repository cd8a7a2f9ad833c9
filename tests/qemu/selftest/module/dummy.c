// SPDX-License-Identifier: GPL-2.0
/*
 * A stand-in for pohmelfs.ko, only for tests/qemu/selftest: registers fs
 * type "pohmel" as an empty, independent-per-mount pseudo filesystem.
 * Mount options steer it: "fail" makes the mount fail (ECONNREFUSED),
 * "warn" triggers a WARN_ON so the harness's log check can be tested; other
 * options are accepted and ignored.
 */
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/string.h>

#define DUMMY_FAIL 1UL
#define DUMMY_WARN 2UL

static int dummy_fill_super(struct super_block *sb, struct fs_context *fc)
{
	static const struct tree_descr files[] = { { "" } };

	return simple_fill_super(sb, 0x504f484d, files);
}

static int dummy_get_tree(struct fs_context *fc)
{
	unsigned long flags = (unsigned long)fc->fs_private;

	WARN_ON(flags & DUMMY_WARN);
	if (flags & DUMMY_FAIL)
		return -ECONNREFUSED;
	return get_tree_nodev(fc, dummy_fill_super);
}

static int dummy_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	unsigned long flags = (unsigned long)fc->fs_private;

	if (!strcmp(param->key, "fail"))
		flags |= DUMMY_FAIL;
	else if (!strcmp(param->key, "warn"))
		flags |= DUMMY_WARN;
	else if (!strcmp(param->key, "source"))
		return -ENOPARAM;	/* the VFS stores it */
	/* anything else (port=, key= from mount.pohmel ...) is ignored */
	fc->fs_private = (void *)flags;
	return 0;
}

static const struct fs_context_operations dummy_ops = {
	.parse_param	= dummy_parse_param,
	.get_tree	= dummy_get_tree,
};

static int dummy_init_fs_context(struct fs_context *fc)
{
	fc->ops = &dummy_ops;
	return 0;
}

static struct file_system_type dummy_fs_type = {
	.owner			= THIS_MODULE,
	.name			= "pohmel",
	.init_fs_context	= dummy_init_fs_context,
	.kill_sb		= kill_anon_super,
};

static int __init dummy_init(void)
{
	return register_filesystem(&dummy_fs_type);
}

static void __exit dummy_exit(void)
{
	unregister_filesystem(&dummy_fs_type);
}

module_init(dummy_init);
module_exit(dummy_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("harness self-test stand-in for pohmelfs");
MODULE_ALIAS_FS("pohmel");
