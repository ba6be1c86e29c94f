"""fairprobe.radius"""
