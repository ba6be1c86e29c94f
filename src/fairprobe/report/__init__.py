"""fairprobe.report"""
